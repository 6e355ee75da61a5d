// Encoding, decoding and the checks shared by both loaders (the file formats are read in
// tokenizer_load.cpp).
#include "tokenize/bpe_tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenize/byte_level.hpp"
#include "tokenize/nfc.hpp"
#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {
namespace {

std::uint64_t pairKey(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
         static_cast<std::uint32_t>(right);
}

// Pieces seen once per encode() call are remembered (text repeats words), up to a bound so a
// hostile text cannot grow the cache without limit; long pieces rarely repeat and are not kept.
constexpr std::size_t kCacheEntries = 1u << 16;
constexpr std::size_t kCachePieceBytes = 256;

}  // namespace

Status BpeTokenizer::addMerge(std::string_view left, std::string_view right, const std::string& where) {
  std::string pair(left);
  pair += ' ';
  pair += right;
  const std::string shown = quote(pair);
  const auto l = vocab_.find(std::string(left));
  if (l == vocab_.end()) return makeError(where + ": merge " + shown + ": '" + std::string(left) + "' is not in the vocabulary");
  const auto r = vocab_.find(std::string(right));
  if (r == vocab_.end()) return makeError(where + ": merge " + shown + ": '" + std::string(right) + "' is not in the vocabulary");
  std::string joined(left);
  joined += right;
  const auto m = vocab_.find(joined);
  if (m == vocab_.end()) return makeError(where + ": merge " + shown + ": the merged token '" + joined + "' is not in the vocabulary");
  const std::int32_t rank = static_cast<std::int32_t>(merges_.size());
  const auto [it, inserted] = merges_.emplace(pairKey(l->second, r->second), Merge{rank, m->second});
  if (!inserted) {
    return makeError(where + ": merge " + shown + " appears twice (merges " + std::to_string(it->second.rank + 1) +
                     " and " + std::to_string(rank + 1) + ")");
  }
  return Ok{};
}

Status BpeTokenizer::finish(const std::string& file) {
  // Every byte must have its own token, or some text could not be encoded at all.
  for (unsigned b = 0; b < 256; ++b) {
    const std::string spelled = bytesToVocabText(std::string(1, static_cast<char>(b)));
    const auto it = vocab_.find(spelled);
    if (it == vocab_.end()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      return makeError(file + ": the vocabulary has no token for byte " + hex + " ('" + spelled +
                       "'), which byte-level BPE needs for every byte");
    }
    byteIds_[b] = it->second;
  }
  for (auto& list : addedByFirstByte_) list.clear();
  for (std::size_t k = 0; k < added_.size(); ++k) {
    addedByFirstByte_[static_cast<unsigned char>(added_[k].content[0])].push_back(k);
  }
  // Longest first: at one position the longest added token wins (leftmost-longest matching).
  for (auto& list : addedByFirstByte_) {
    std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
      return added_[a].content.size() > added_[b].content.size();
    });
  }
  return Ok{};
}

void BpeTokenizer::encodePiece(std::string_view pieceBytes, std::vector<std::int32_t>& ids) const {
  if (pieceBytes.empty()) return;
  if (ignoreMerges_) {
    // tokenizer.json's ignore_merges: a piece that is a whole vocabulary entry is that token,
    // whatever the merges would have made of it.
    const auto it = vocab_.find(bytesToVocabText(pieceBytes));
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  const std::size_t n = pieceBytes.size();
  if (n == 1) {
    ids.push_back(byteIds_[static_cast<unsigned char>(pieceBytes[0])]);
    return;
  }
  // Symbols as a doubly linked list over positions 0 … n-1; a merge keeps the left position.
  std::vector<std::int32_t> sym(n);
  std::vector<std::int64_t> prev(n), next(n);
  for (std::size_t k = 0; k < n; ++k) {
    sym[k] = byteIds_[static_cast<unsigned char>(pieceBytes[k])];
    prev[k] = static_cast<std::int64_t>(k) - 1;
    next[k] = (k + 1 < n) ? static_cast<std::int64_t>(k + 1) : -1;
  }
  // Candidate merges ordered by (rank, position): the lowest rank first and, among equal ranks,
  // the leftmost — the order GPT-2's and Hugging Face's BPE apply them in. Entries go stale when a
  // neighbour merges; they are checked when popped.
  using Candidate = std::pair<std::int32_t, std::int64_t>;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](std::int64_t left) {
    if (left < 0) return;
    const std::int64_t right = next[static_cast<std::size_t>(left)];
    if (right < 0) return;
    const auto it = merges_.find(pairKey(sym[static_cast<std::size_t>(left)], sym[static_cast<std::size_t>(right)]));
    if (it != merges_.end()) queue.emplace(it->second.rank, left);
  };
  std::vector<char> alive(n, 1);
  for (std::size_t k = 0; k + 1 < n; ++k) consider(static_cast<std::int64_t>(k));
  while (!queue.empty()) {
    const auto [rank, left] = queue.top();
    queue.pop();
    const auto l = static_cast<std::size_t>(left);
    if (!alive[l] || next[l] < 0) continue;
    const auto r = static_cast<std::size_t>(next[l]);
    const auto it = merges_.find(pairKey(sym[l], sym[r]));
    if (it == merges_.end() || it->second.rank != rank) continue;  // stale: a neighbour changed
    sym[l] = it->second.merged;
    alive[r] = 0;
    next[l] = next[r];
    if (next[r] >= 0) prev[static_cast<std::size_t>(next[r])] = left;
    consider(prev[l]);
    consider(left);
  }
  for (std::int64_t k = 0; k >= 0; k = next[static_cast<std::size_t>(k)]) ids.push_back(sym[static_cast<std::size_t>(k)]);
}

void BpeTokenizer::encodeSegment(std::string_view segment, std::vector<std::int32_t>& ids,
                                 std::unordered_map<std::string, std::vector<std::int32_t>>& cache) const {
  if (segment.empty()) return;
  std::vector<std::string> pieces{nfc_ ? toNfc(segment) : std::string(segment)};
  std::vector<std::string> nextPieces;
  auto cut = [&](const std::string& piece, const ByteSpans& spans) {
    for (const auto& [b, e] : spans) nextPieces.push_back(piece.substr(b, e - b));
  };
  for (const PreTokenizerStep& step : steps_) {
    nextPieces.clear();
    for (std::string& piece : pieces) {
      switch (step.kind) {
        case PreTokenizerStep::Kind::Split: cut(piece, splitByRegex(step.regex, piece)); break;
        case PreTokenizerStep::Kind::Digits: cut(piece, splitDigits(piece, step.individualDigits)); break;
        case PreTokenizerStep::Kind::ByteLevel:
          if (step.addPrefixSpace && piece.front() != ' ') piece.insert(piece.begin(), ' ');
          if (step.useRegex) {
            cut(piece, splitByRegex(SplitRegex::Gpt2, piece));
          } else {
            nextPieces.push_back(std::move(piece));
          }
          break;
      }
    }
    pieces.swap(nextPieces);
  }
  for (const std::string& piece : pieces) {
    const bool cacheable = piece.size() <= kCachePieceBytes;
    if (cacheable) {
      const auto hit = cache.find(piece);
      if (hit != cache.end()) {
        ids.insert(ids.end(), hit->second.begin(), hit->second.end());
        continue;
      }
    }
    const std::size_t first = ids.size();
    encodePiece(piece, ids);
    if (cacheable && cache.size() < kCacheEntries) {
      cache.emplace(piece, std::vector<std::int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end()));
    }
  }
}

Result<std::vector<std::int32_t>> BpeTokenizer::encode(std::string_view text) const {
  if (text.size() > kMaxTextBytes) {
    return makeError("the text is " + std::to_string(text.size()) + " bytes; the tokenizer takes at most " +
                     std::to_string(kMaxTextBytes) + " bytes (4 MiB)");
  }
  const std::string clean = replaceInvalidUtf8(text);
  std::vector<std::int32_t> ids;
  ids.reserve(clean.size() / 3 + 1);
  std::unordered_map<std::string, std::vector<std::int32_t>> cache;
  std::size_t segmentStart = 0;
  std::size_t i = 0;
  const std::string_view all(clean);
  while (i < all.size()) {
    const AddedToken* hit = nullptr;
    for (std::size_t k : addedByFirstByte_[static_cast<unsigned char>(all[i])]) {
      if (all.compare(i, added_[k].content.size(), added_[k].content) == 0) {
        hit = &added_[k];
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    encodeSegment(all.substr(segmentStart, i - segmentStart), ids, cache);
    ids.push_back(hit->id);
    i += hit->content.size();
    segmentStart = i;
  }
  encodeSegment(all.substr(segmentStart), ids, cache);
  return ids;
}

Result<std::string> BpeTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string bytes;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto it = entries_.find(ids[k]);
    if (it == entries_.end()) {
      return makeError("token id " + std::to_string(ids[k]) + " (position " + std::to_string(k) +
                       ") is not in the vocabulary of " + std::to_string(vocabSize()) + " tokens");
    }
    bytes += it->second.bytes;
  }
  return replaceInvalidUtf8(bytes);
}

std::optional<std::string> BpeTokenizer::tokenBytes(std::int32_t id) const {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.bytes;
}

std::optional<std::string> BpeTokenizer::tokenText(std::int32_t id) const {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.text;
}

std::string BpeTokenizer::displayToken(std::int32_t id) const {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return "<id " + std::to_string(id) + "?>";
  if (it->second.added) return it->second.text;  // "<|endoftext|>" as written
  return visibleToken(it->second.bytes);
}

std::optional<std::int32_t> BpeTokenizer::tokenId(std::string_view vocabText) const {
  const auto it = vocab_.find(std::string(vocabText));
  if (it != vocab_.end()) return it->second;
  for (const AddedToken& a : added_) {
    if (a.content == vocabText) return a.id;
  }
  return std::nullopt;
}

bool BpeTokenizer::isSpecial(std::int32_t id) const {
  const auto it = entries_.find(id);
  return it != entries_.end() && it->second.special;
}

std::string BpeTokenizer::describe() const {
  std::string s = "byte-level BPE: " + std::to_string(vocabSize()) + " tokens, " + std::to_string(merges_.size()) +
                  " merges, " + std::to_string(added_.size()) + (added_.size() == 1 ? " added token" : " added tokens");
  s += "; pre-tokenizer:";
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    const PreTokenizerStep& st = steps_[k];
    s += k == 0 ? " " : ", ";
    switch (st.kind) {
      case PreTokenizerStep::Kind::Split: s += std::string("Split (") + splitRegexName(st.regex) + " regex)"; break;
      case PreTokenizerStep::Kind::Digits: s += st.individualDigits ? "Digits (one by one)" : "Digits"; break;
      case PreTokenizerStep::Kind::ByteLevel:
        s += "ByteLevel";
        if (st.useRegex) s += " (GPT-2 regex)";
        if (st.addPrefixSpace) s += " with a prefix space";
        break;
    }
  }
  if (ignoreMerges_) s += "; whole-word vocabulary matches first";
  if (nfc_) s += "; text put in NFC first";
  return s;
}

}  // namespace mhascope::tokenize
