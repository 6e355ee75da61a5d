// The kept residual streams (residual_cache.hpp).
#include "model/residual_cache.hpp"

namespace mhascope::model {
namespace {

std::uint64_t bytesOf(const RowMatrix& x) { return static_cast<std::uint64_t>(x.size()) * sizeof(float); }

}  // namespace

ResidualCache::Sequence* ResidualCache::find(const std::string& model, const std::vector<int>& tokens) const {
  for (auto it = sequences_.begin(); it != sequences_.end(); ++it) {
    if (it->model == model && it->tokens == tokens) {
      sequences_.splice(sequences_.begin(), sequences_, it);
      return &sequences_.front();
    }
  }
  return nullptr;
}

std::optional<std::pair<int, RowMatrix>> ResidualCache::deepest(const std::string& model, const std::vector<int>& tokens,
                                                                int layer) const {
  std::lock_guard lock(mutex_);
  const Sequence* s = find(model, tokens);
  if (!s) return std::nullopt;
  auto it = s->streams.upper_bound(layer);
  if (it == s->streams.begin()) return std::nullopt;
  --it;
  return std::make_pair(it->first, it->second);
}

std::optional<RowMatrix> ResidualCache::at(const std::string& model, const std::vector<int>& tokens, int layer) const {
  std::lock_guard lock(mutex_);
  const Sequence* s = find(model, tokens);
  if (!s) return std::nullopt;
  auto it = s->streams.find(layer);
  if (it == s->streams.end()) return std::nullopt;
  return it->second;
}

void ResidualCache::put(const std::string& model, const std::vector<int>& tokens, int layer, const RowMatrix& x) {
  if (layer < 1) return;
  const std::uint64_t need = bytesOf(x);
  std::lock_guard lock(mutex_);
  if (need > maxBytes_) return;
  Sequence* s = find(model, tokens);
  if (!s) {
    sequences_.push_front(Sequence{model, tokens, {}});
    s = &sequences_.front();
  }
  if (auto it = s->streams.find(layer); it != s->streams.end()) {
    bytes_ -= bytesOf(it->second);
    s->streams.erase(it);
  }
  // Room from the older sequences first (the newest is this one, at the front).
  while (bytes_ + need > maxBytes_ && sequences_.size() > 1) {
    for (const auto& [l, kept] : sequences_.back().streams) bytes_ -= bytesOf(kept);
    sequences_.pop_back();
  }
  while (sequences_.size() > kSequences) {
    for (const auto& [l, kept] : sequences_.back().streams) bytes_ -= bytesOf(kept);
    sequences_.pop_back();
  }
  if (bytes_ + need > maxBytes_) return;  // this sequence holds the rest: its earlier layers stay
  s->streams.emplace(layer, x);
  bytes_ += need;
}

std::uint64_t ResidualCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t ResidualCache::streams() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const Sequence& s : sequences_) n += s.streams.size();
  return n;
}

}  // namespace mhascope::model
