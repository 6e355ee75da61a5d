// Encoding, decoding and the checks shared by both loaders (the file formats are read in
// tokenizer_json.cpp, tokenizer_vocab_merges.cpp).
#include "tokenize/bpe_tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenize/byte_level.hpp"
#include "tokenize/nfc.hpp"
#include "tokenize/text_utf8.hpp"
#include "tokenize/unicode_classes.hpp"

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
  if (byteLevel_) {
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
  }
  addedNormalized_.resize(added_.size(), false);
  for (auto* table : {&addedByFirstByte_, &normalizedAddedByFirstByte_}) {
    for (auto& list : *table) list.clear();
  }
  for (std::size_t k = 0; k < added_.size(); ++k) {
    auto& table = addedNormalized_[k] ? normalizedAddedByFirstByte_ : addedByFirstByte_;
    table[static_cast<unsigned char>(added_[k].content[0])].push_back(k);
  }
  // Longest first: at one position the longest added token wins (leftmost-longest matching).
  for (auto* table : {&addedByFirstByte_, &normalizedAddedByFirstByte_}) {
    for (auto& list : *table) {
      std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
        return added_[a].content.size() > added_[b].content.size();
      });
    }
  }
  return Ok{};
}

Status BpeTokenizer::characterSymbols(std::string_view piece, std::vector<std::int32_t>& sym) const {
  // As Hugging Face's BPE starts a word: each character is its token; one without a token becomes
  // its bytes' <0xNN> tokens (byte_fallback), else the unknown token, a run of unknown characters
  // one unknown token when fuse_unk is set.
  bool lastUnknown = false;
  std::size_t i = 0;
  while (i < piece.size()) {
    char32_t cp = 0;
    std::size_t len = decodeUtf8(piece, i, cp);
    if (len == 0) len = 1;  // not reached: the text was made valid UTF-8 first
    const std::string ch(piece.substr(i, len));
    i += len;
    if (const auto it = vocab_.find(ch); it != vocab_.end()) {
      sym.push_back(it->second);
      lastUnknown = false;
    } else if (byteFallback_) {
      for (char b : ch) sym.push_back(byteIds_[static_cast<unsigned char>(b)]);
      lastUnknown = false;
    } else if (unk_) {
      if (!(lastUnknown && fuseUnk_)) sym.push_back(*unk_);
      lastUnknown = true;
    } else {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
      return makeError("the character " + quote(replaceInvalidUtf8(ch)) + " (" + hex +
                       ") has no token, and the tokenizer has neither byte_fallback nor an unk_token to stand for it");
    }
  }
  return Ok{};
}

void BpeTokenizer::mergeSymbols(std::vector<std::int32_t>& sym) const {
  const std::size_t n = sym.size();
  if (n < 2) return;
  // Symbols as a doubly linked list over positions 0 … n-1; a merge keeps the left position.
  std::vector<std::int64_t> prev(n), next(n);
  for (std::size_t k = 0; k < n; ++k) {
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
  std::size_t out = 0;
  for (std::int64_t k = 0; k >= 0; k = next[static_cast<std::size_t>(k)]) sym[out++] = sym[static_cast<std::size_t>(k)];
  sym.resize(out);
}

Status BpeTokenizer::encodePiece(std::string_view piece, std::vector<std::int32_t>& ids) const {
  if (piece.empty()) return Ok{};
  if (ignoreMerges_) {
    // tokenizer.json's ignore_merges: a piece that is a whole vocabulary entry is that token,
    // whatever the merges would have made of it.
    const auto it = vocab_.find(byteLevel_ ? bytesToVocabText(piece) : std::string(piece));
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return Ok{};
    }
  }
  std::vector<std::int32_t> sym;
  sym.reserve(piece.size());
  if (byteLevel_) {
    for (char b : piece) sym.push_back(byteIds_[static_cast<unsigned char>(b)]);
  } else if (auto st = characterSymbols(piece, sym); !st) {
    return st;
  }
  mergeSymbols(sym);
  ids.insert(ids.end(), sym.begin(), sym.end());
  return Ok{};
}

std::string BpeTokenizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : normalizer_) {
    switch (step.kind) {
      case NormalizerStep::Kind::Nfc: s = toNfc(s); break;
      case NormalizerStep::Kind::Prepend:
        if (!s.empty()) s.insert(0, step.content);
        break;
      case NormalizerStep::Kind::Replace: {
        std::string out;
        std::size_t pos = 0;
        for (std::size_t at; (at = s.find(step.pattern, pos)) != std::string::npos; pos = at + step.pattern.size()) {
          out.append(s, pos, at - pos);
          out += step.content;
        }
        out.append(s, pos, std::string::npos);
        s = std::move(out);
        break;
      }
    }
  }
  return s;
}

Status BpeTokenizer::pretokenizeAndEncode(std::string_view text, bool startsText, std::vector<std::int32_t>& ids,
                                          PieceCache& cache) const {
  if (text.empty()) return Ok{};
  std::vector<std::string> pieces{std::string(text)};
  std::vector<std::string> nextPieces;
  auto cut = [&](const std::string& piece, const ByteSpans& spans) {
    for (const auto& [b, e] : spans) nextPieces.push_back(piece.substr(b, e - b));
  };
  for (const PreTokenizerStep& step : steps_) {
    nextPieces.clear();
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      std::string& piece = pieces[k];
      switch (step.kind) {
        case PreTokenizerStep::Kind::Split: cut(piece, splitByRegex(step.regex, piece)); break;
        case PreTokenizerStep::Kind::SplitText: cut(piece, splitByText(piece, step.text, step.behavior)); break;
        case PreTokenizerStep::Kind::Digits: cut(piece, splitDigits(piece, step.individualDigits)); break;
        case PreTokenizerStep::Kind::Metaspace: {
          std::string replaced;
          for (char c : piece) {
            if (c == ' ') {
              replaced += step.text;
            } else {
              replaced += c;
            }
          }
          // "first": only the piece where the text begins (not one after an added token).
          const bool prepend = step.prepend == PrependScheme::Always ||
                               (step.prepend == PrependScheme::First && startsText && k == 0);
          if (prepend && replaced.compare(0, step.text.size(), step.text) != 0) replaced.insert(0, step.text);
          if (step.split) {
            cut(replaced, splitByText(replaced, step.text, SplitBehavior::MergedWithNext));
          } else {
            nextPieces.push_back(std::move(replaced));
          }
          break;
        }
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
    if (auto st = encodePiece(piece, ids); !st) return st;
    if (cacheable && cache.size() < kCacheEntries) {
      cache.emplace(piece, std::vector<std::int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end()));
    }
  }
  return Ok{};
}

namespace {

// The byte length of the whitespace (Unicode White_Space) that `text` starts with / ends with.
std::size_t leadingWhitespace(std::string_view text) {
  const CodePoints cp = decodeAll(text);
  std::size_t k = 0;
  while (k < cp.cps.size() && isWhitespace(cp.cps[k])) ++k;
  return cp.offsets[k];
}

std::size_t trailingWhitespace(std::string_view text) {
  const CodePoints cp = decodeAll(text);
  std::size_t k = cp.cps.size();
  while (k > 0 && isWhitespace(cp.cps[k - 1])) --k;
  return text.size() - cp.offsets[k];
}

// Cuts `text` at the added tokens of `table` (leftmost, longest): each stretch between them goes
// to `stretch(part, startsText)`, each token's id to `ids`. A token's lstrip / rstrip takes the
// whitespace before / after it out of the stretches, as Hugging Face's added vocabulary does.
template <typename Stretch>
Status cutAtAddedTokens(std::string_view text, bool startsText, const std::array<std::vector<std::size_t>, 256>& table,
                        const std::vector<AddedToken>& added, std::vector<std::int32_t>& ids, Stretch&& stretch) {
  std::size_t segmentStart = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (std::size_t k : table[static_cast<unsigned char>(text[i])]) {
      if (text.compare(i, added[k].content.size(), added[k].content) == 0) {
        hit = &added[k];
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    std::string_view before = text.substr(segmentStart, i - segmentStart);
    if (hit->lstrip) before.remove_suffix(trailingWhitespace(before));
    if (auto st = stretch(before, startsText && segmentStart == 0); !st) return st;
    ids.push_back(hit->id);
    i += hit->content.size();
    if (hit->rstrip) i += leadingWhitespace(text.substr(i));
    segmentStart = i;
  }
  return stretch(text.substr(segmentStart), startsText && segmentStart == 0);
}

}  // namespace

Status BpeTokenizer::encodeSegment(std::string_view segment, bool startsText, std::vector<std::int32_t>& ids,
                                   PieceCache& cache) const {
  if (segment.empty()) return Ok{};
  const std::string normalized = normalize(segment);
  return cutAtAddedTokens(normalized, startsText, normalizedAddedByFirstByte_, added_, ids,
                          [&](std::string_view part, bool first) { return pretokenizeAndEncode(part, first, ids, cache); });
}

Result<std::vector<std::int32_t>> BpeTokenizer::encode(std::string_view text) const {
  if (text.size() > kMaxTextBytes) {
    return makeError("the text is " + std::to_string(text.size()) + " bytes; the tokenizer takes at most " +
                     std::to_string(kMaxTextBytes) + " bytes (4 MiB)");
  }
  const std::string clean = replaceInvalidUtf8(text);
  std::vector<std::int32_t> ids;
  ids.reserve(clean.size() / 3 + 1);
  PieceCache cache;
  if (auto st = cutAtAddedTokens(clean, true, addedByFirstByte_, added_, ids,
                                 [&](std::string_view part, bool first) { return encodeSegment(part, first, ids, cache); });
      !st) {
    return st.error();
  }
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
  // The decoder's Strip: the space the normalizer's "▁" put before the text is not the text's.
  std::size_t begin = 0, end = bytes.size();
  while (begin < stripStart_ && begin < end && bytes[begin] == ' ') ++begin;
  while (bytes.size() - end < stripStop_ && end > begin && bytes[end - 1] == ' ') --end;
  return replaceInvalidUtf8(std::string_view(bytes).substr(begin, end - begin));
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
  if (it->second.added) return visibleToken(it->second.text);  // "<|endoftext|>" as written, controls escaped
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

bool BpeTokenizer::normalizesToNfc() const {
  return std::any_of(normalizer_.begin(), normalizer_.end(),
                     [](const NormalizerStep& n) { return n.kind == NormalizerStep::Kind::Nfc; });
}

std::string BpeTokenizer::describe() const {
  std::string s = std::string(byteLevel_ ? "byte-level BPE: " : "SentencePiece-style BPE: ") + std::to_string(vocabSize()) +
                  " tokens, " + std::to_string(merges_.size()) + " merges, " + std::to_string(added_.size()) +
                  (added_.size() == 1 ? " added token" : " added tokens");
  if (!normalizer_.empty()) {
    s += "; normalizer:";
    for (std::size_t k = 0; k < normalizer_.size(); ++k) {
      const NormalizerStep& n = normalizer_[k];
      s += k == 0 ? " " : ", ";
      switch (n.kind) {
        case NormalizerStep::Kind::Nfc: s += "NFC"; break;
        case NormalizerStep::Kind::Prepend: s += "Prepend " + quote(n.content); break;
        case NormalizerStep::Kind::Replace: s += "Replace " + quote(n.pattern) + " \xE2\x86\x92 " + quote(n.content); break;
      }
    }
  }
  s += "; pre-tokenizer:";
  if (steps_.empty()) s += " none";
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    const PreTokenizerStep& st = steps_[k];
    s += k == 0 ? " " : ", ";
    switch (st.kind) {
      case PreTokenizerStep::Kind::Split: s += std::string("Split (") + splitRegexName(st.regex) + " regex)"; break;
      case PreTokenizerStep::Kind::SplitText: s += "Split on " + quote(st.text); break;
      case PreTokenizerStep::Kind::Metaspace:
        s += "Metaspace " + quote(st.text);
        s += st.prepend == PrependScheme::Always ? " (prepended to every piece" :
             st.prepend == PrependScheme::First  ? " (prepended to the text" : " (never prepended";
        s += st.split ? ", split before each)" : ")";
        break;
      case PreTokenizerStep::Kind::Digits: s += st.individualDigits ? "Digits (one by one)" : "Digits"; break;
      case PreTokenizerStep::Kind::ByteLevel:
        s += "ByteLevel";
        if (st.useRegex) s += " (GPT-2 regex)";
        if (st.addPrefixSpace) s += " with a prefix space";
        break;
    }
  }
  if (byteFallback_) s += "; characters without a token as <0xNN> bytes";
  if (unk_) s += "; unknown: " + quote(entries_.at(*unk_).text) + (fuseUnk_ ? " (a run as one)" : "");
  if (ignoreMerges_) s += "; whole-word vocabulary matches first";
  return s;
}

}  // namespace mhascope::tokenize
