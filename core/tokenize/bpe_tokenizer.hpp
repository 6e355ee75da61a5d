// The BPE tokenizers of Hugging Face's tokenizer.json "BPE" model, in its two kinds:
//  - byte-level (GPT-2, Llama 3, Qwen2/3, SmolLM2): the pre-tokenizer ends in ByteLevel, the bytes
//    of every piece are spelled through the byte-to-unicode map, and the model's symbols are bytes;
//  - SentencePiece-style (Llama 2, Mistral 7B, Gemma): spaces become "▁" (a Metaspace
//    pre-tokenizer, or a Prepend "▁" + Replace " " → "▁" normalizer), the model's symbols are
//    characters, and a character with no token becomes its UTF-8 bytes as <0xNN> tokens
//    (byte_fallback) or the unknown token.
// Both cut added/special tokens out first (leftmost, longest: those marked "normalized" in the
// normalized text, the others in the text as given), normalize and pre-tokenize each stretch
// between them, and apply merges by rank (lowest first, leftmost on ties) until none applies.
// Pure: no files (see tokenizer_files.hpp), no global state; encode() is const and safe to call
// from several threads.
//
// Loading reads untrusted bytes: every malformed vocabulary, merge list or tokenizer.json gives
// one Error naming the file, the key and the problem, and pieces of Hugging Face's format this
// code does not implement (another normalizer, pre-tokenizer, regex, decoder or model option) are
// refused by name rather than approximated, so a tokenizer that loads splits text exactly as its
// model expects.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenize/pre_tokenize.hpp"
#include "util/result.hpp"

namespace mhascope::tokenize {

// Bounds on untrusted input; above them loading or encoding is refused with the sizes named.
inline constexpr std::size_t kMaxTokenizerFileBytes = 64u << 20;  // tokenizer.json, vocab.json, merges.txt
inline constexpr std::size_t kMaxVocabTokens = 1u << 20;          // the largest real vocabularies are ~260 k
inline constexpr std::size_t kMaxMerges = 1u << 20;
inline constexpr std::size_t kMaxAddedTokens = 1u << 16;
inline constexpr std::size_t kMaxTextBytes = 4u << 20;            // text to encode: 4 MiB (~1 M tokens)
inline constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 31) - 1;

struct AddedToken {
  std::int32_t id = 0;
  std::string content;  // matched verbatim in the text, before any splitting
  bool special = false;
  // The whitespace before (lstrip) / after (rstrip) a match goes with the token and is not
  // encoded (Phi-3's chat tokens).
  bool lstrip = false;
  bool rstrip = false;
};

// One step of the normalizer, in the order tokenizer.json lists them; applied to each stretch of
// text between added tokens.
struct NormalizerStep {
  enum class Kind { Nfc, Prepend, Replace };
  Kind kind = Kind::Nfc;
  std::string pattern;  // Replace: the literal text replaced
  std::string content;  // Prepend: what goes before a non-empty stretch; Replace: the replacement
};

// How a Metaspace pre-tokenizer puts its replacement before a piece that does not start with it:
// before every piece, only before the piece that starts the text, or never.
enum class PrependScheme { Always, First, Never };

// One step of the pre-tokenizer, in the order tokenizer.json lists them.
struct PreTokenizerStep {
  enum class Kind { Split, SplitText, Digits, Metaspace, ByteLevel };
  Kind kind = Kind::ByteLevel;
  SplitRegex regex = SplitRegex::Gpt2;  // Split (by a regex; its behavior is "Isolated")
  std::string text;                     // SplitText: the literal text split on; Metaspace: the replacement
  SplitBehavior behavior = SplitBehavior::Isolated;  // SplitText
  bool individualDigits = false;        // Digits
  PrependScheme prepend = PrependScheme::Always;     // Metaspace
  bool split = true;                    // Metaspace: cut before every replacement character
  bool addPrefixSpace = false;          // ByteLevel: a space before every piece that lacks one
  bool useRegex = true;                 // ByteLevel: split with the GPT-2 regex
};

class BpeTokenizer {
 public:
  // `file` names the source in error messages ("gpt2/tokenizer.json").
  static Result<BpeTokenizer> fromTokenizerJson(std::string_view bytes, const std::string& file);
  // GPT-2's original pair of files. Vocabulary entries spelled "<|…|>" (such as <|endoftext|>)
  // are special tokens, matched in the text before splitting, as GPT-2's tokenizer treats them.
  static Result<BpeTokenizer> fromVocabAndMerges(std::string_view vocabBytes, const std::string& vocabFile,
                                                 std::string_view mergesBytes, const std::string& mergesFile);

  // Text → token ids. Ill-formed UTF-8 is replaced with U+FFFD first; text longer than
  // kMaxTextBytes is refused, and so is a character with no token when the tokenizer has neither
  // byte_fallback nor an unknown token (Hugging Face's would drop it unseen). Empty text gives no
  // ids. No BOS is added (see bosToken()).
  Result<std::vector<std::int32_t>> encode(std::string_view text) const;
  // Ids → text: the tokens' bytes joined, the leading spaces the decoder strips (SentencePiece
  // style: the "▁" the normalizer put first) removed, ill-formed UTF-8 (a multi-byte character
  // cut between tokens at the end) replaced with U+FFFD. An id outside the vocabulary is an error.
  Result<std::string> decode(const std::vector<std::int32_t>& ids) const;

  // The bytes a token stands for (" world" for "Ġworld" and for "▁world", "\n" for "<0x0A>");
  // nothing for an unknown id.
  std::optional<std::string> tokenBytes(std::int32_t id) const;
  // The vocabulary's spelling ("Ġworld", "▁world", "<0x0A>", "<|endoftext|>").
  std::optional<std::string> tokenText(std::int32_t id) const;
  // For display: tokenBytes with spaces drawn as '␣' and control bytes spelled out (visibleToken);
  // an added token as written, its control characters spelled out likewise.
  std::string displayToken(std::int32_t id) const;
  std::optional<std::int32_t> tokenId(std::string_view vocabText) const;
  bool isSpecial(std::int32_t id) const;

  std::size_t vocabSize() const { return vocab_.size() + addedOnly_; }  // distinct ids
  std::size_t mergeCount() const { return merges_.size(); }
  const std::vector<AddedToken>& addedTokens() const { return added_; }
  const std::vector<PreTokenizerStep>& preTokenizer() const { return steps_; }
  const std::vector<NormalizerStep>& normalizer() const { return normalizer_; }
  bool ignoreMerges() const { return ignoreMerges_; }
  // The model's symbols are bytes (a ByteLevel pre-tokenizer) rather than characters.
  bool byteLevel() const { return byteLevel_; }
  // SentencePiece style: a character with no token becomes its bytes' <0xNN> tokens.
  bool byteFallback() const { return byteFallback_; }
  // The token a character with no token (and no byte fallback) becomes, if any.
  std::optional<std::int32_t> unknownToken() const { return unk_; }
  // tokenizer.json's NFC normalizer (Qwen2): each stretch between added tokens is put in NFC first.
  bool normalizesToNfc() const;
  // The token tokenizer.json's post-processor template puts before the text (Llama-3's
  // <|begin_of_text|>), if any; the model decides whether to add it.
  std::optional<std::int32_t> bosToken() const { return bos_; }
  // "byte-level BPE: 50257 tokens, 50000 merges, 1 added token; pre-tokenizer: ByteLevel (GPT-2 regex)",
  // "SentencePiece-style BPE: 32000 tokens, …; normalizer: Prepend '▁', Replace ' ' → '▁'; …"
  std::string describe() const;

 private:
  struct Merge {
    std::int32_t rank;
    std::int32_t merged;  // id of the joined token
  };
  struct Entry {
    std::string text;   // vocabulary spelling
    std::string bytes;  // what it stands for
    bool special = false;
    bool added = false;
  };

  using PieceCache = std::unordered_map<std::string, std::vector<std::int32_t>>;

  // Shared by both loaders once vocab_, merges text and added_ are filled: checks and indexes.
  Status finish(const std::string& file);
  Status addMerge(std::string_view left, std::string_view right, const std::string& where);
  // One stretch between the added tokens matched in the text as given: normalized, then cut at
  // the added tokens matched in normalized text, and each rest through pretokenizeAndEncode.
  Status encodeSegment(std::string_view segment, bool startsText, std::vector<std::int32_t>& ids, PieceCache& cache) const;
  Status pretokenizeAndEncode(std::string_view text, bool startsText, std::vector<std::int32_t>& ids, PieceCache& cache) const;
  // The model on one piece: its first symbols (bytes, or characters with byte fallback / unknown
  // token), then the merges.
  Status encodePiece(std::string_view piece, std::vector<std::int32_t>& ids) const;
  Status characterSymbols(std::string_view piece, std::vector<std::int32_t>& sym) const;
  void mergeSymbols(std::vector<std::int32_t>& sym) const;
  std::string normalize(std::string_view text) const;

  std::unordered_map<std::string, std::int32_t> vocab_;  // spelling → id (model vocabulary)
  std::unordered_map<std::int32_t, Entry> entries_;      // id → entry (vocabulary and added tokens)
  std::unordered_map<std::uint64_t, Merge> merges_;      // (left id << 32 | right id) → merge
  std::vector<AddedToken> added_;
  std::vector<bool> addedNormalized_;                    // per added_: matched in normalized text
  std::size_t addedOnly_ = 0;                            // added tokens whose id is not in vocab_
  // Indexes into added_, longest first, by first byte: matched in the text as given, and in
  // normalized text.
  std::array<std::vector<std::size_t>, 256> addedByFirstByte_, normalizedAddedByFirstByte_;
  std::array<std::int32_t, 256> byteIds_{};              // byte level: id of each single-byte token;
                                                         // byte fallback: id of each <0xNN> token
  std::vector<NormalizerStep> normalizer_;
  std::vector<PreTokenizerStep> steps_;
  bool byteLevel_ = true;
  bool byteFallback_ = false;
  bool fuseUnk_ = false;
  std::optional<std::int32_t> unk_;
  // SentencePiece-style decoding: at most this many leading / trailing spaces are stripped from
  // the decoded text (the decoder's Strip, or a Metaspace decoder that prepends).
  std::size_t stripStart_ = 0, stripStop_ = 0;
  bool ignoreMerges_ = false;
  std::optional<std::int32_t> bos_;
};

}  // namespace mhascope::tokenize
