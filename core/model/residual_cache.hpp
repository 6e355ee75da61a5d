// The residual stream before each layer of a model folder's forward over one token sequence,
// kept for the next forward of the same weights over the same tokens. A forward that needs
// nothing of the layers before L (the pipeline showing layer L) starts from the stream before L,
// so a change of layer runs only the layers between; a forward that must see every layer's
// attention (the Model tab) still runs each layer's attention but skips the residual update and
// the MLP of a layer whose next stream is kept. The kept streams are the numbers the same code
// computed, so a forward gives the same bits with or without the cache.
//
// A few sequences at a time (the least recently used goes first), at most `maxBytes` in all;
// thread-safe: the window's jobs share one. A folder is recognised by ModelFolder::identity, so
// a changed config or weight file never meets streams of the old one.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention/tensor.hpp"

namespace mhascope::model {

class ResidualCache {
 public:
  static constexpr std::size_t kSequences = 4;
  explicit ResidualCache(std::uint64_t maxBytes = std::uint64_t{256} << 20) : maxBytes_(maxBytes) {}

  // The deepest kept stream before a layer in 1 .. `layer`, with that layer; nullopt if none.
  std::optional<std::pair<int, RowMatrix>> deepest(const std::string& model, const std::vector<int>& tokens,
                                                   int layer) const;
  // The stream before `layer`, if kept.
  std::optional<RowMatrix> at(const std::string& model, const std::vector<int>& tokens, int layer) const;
  // Keeps the stream before `layer` (≥ 1) unless it alone would pass the limit; older sequences
  // go first to make room, then this sequence's deepest streams are not added.
  void put(const std::string& model, const std::vector<int>& tokens, int layer, const RowMatrix& x);

  std::uint64_t bytes() const;
  std::size_t streams() const;  // kept in all (tests)

 private:
  struct Sequence {
    std::string model;
    std::vector<int> tokens;
    std::map<int, RowMatrix> streams;  // by layer
  };
  Sequence* find(const std::string& model, const std::vector<int>& tokens) const;  // also makes it the newest

  mutable std::mutex mutex_;
  mutable std::list<Sequence> sequences_;  // newest first
  std::uint64_t maxBytes_;
  std::uint64_t bytes_ = 0;
};

}  // namespace mhascope::model
