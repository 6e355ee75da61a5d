// Byte-level BPE as GPT-2 and the Llama-3 / Qwen2 / SmolLM2 family's tokenizer.json "BPE" models
// split text: added/special tokens are cut out first (leftmost, longest), each stretch between
// them goes through the pre-tokenizer steps (Split by a recognised regex, Digits, ByteLevel), the
// bytes of every piece are spelled through the byte-to-unicode map, and merges are applied by rank
// (lowest first, leftmost on ties) until none applies. Pure: no files (see tokenizer_files.hpp),
// no global state; encode() is const and safe to call from several threads.
//
// Loading reads untrusted bytes: every malformed vocabulary, merge list or tokenizer.json gives
// one Error naming the file and the problem, and pieces of Hugging Face's format this code does
// not implement (another normalizer, pre-tokenizer, regex or model option) are refused by name
// rather than approximated, so a tokenizer that loads splits text exactly as its model expects.
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
};

// One step of the pre-tokenizer, in the order tokenizer.json lists them.
struct PreTokenizerStep {
  enum class Kind { Split, Digits, ByteLevel };
  Kind kind = Kind::ByteLevel;
  SplitRegex regex = SplitRegex::Gpt2;  // Split
  bool individualDigits = false;        // Digits
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
  // kMaxTextBytes is refused. Empty text gives no ids. No BOS is added (see bosToken()).
  Result<std::vector<std::int32_t>> encode(std::string_view text) const;
  // Ids → text: the tokens' bytes joined, ill-formed UTF-8 (a multi-byte character cut between
  // tokens at the end) replaced with U+FFFD. An id outside the vocabulary is an error.
  Result<std::string> decode(const std::vector<std::int32_t>& ids) const;

  // The bytes a token stands for (" world" for "Ġworld"); nothing for an unknown id.
  std::optional<std::string> tokenBytes(std::int32_t id) const;
  // The vocabulary's spelling ("Ġworld", "<|endoftext|>").
  std::optional<std::string> tokenText(std::int32_t id) const;
  // For display: tokenBytes with spaces drawn as '␣' and control bytes spelled out (visibleToken).
  std::string displayToken(std::int32_t id) const;
  std::optional<std::int32_t> tokenId(std::string_view vocabText) const;
  bool isSpecial(std::int32_t id) const;

  std::size_t vocabSize() const { return vocab_.size() + addedOnly_; }  // distinct ids
  std::size_t mergeCount() const { return merges_.size(); }
  const std::vector<AddedToken>& addedTokens() const { return added_; }
  const std::vector<PreTokenizerStep>& preTokenizer() const { return steps_; }
  bool ignoreMerges() const { return ignoreMerges_; }
  // tokenizer.json's NFC normalizer (Qwen2): each stretch between added tokens is put in NFC first.
  bool normalizesToNfc() const { return nfc_; }
  // The token tokenizer.json's post-processor template puts before the text (Llama-3's
  // <|begin_of_text|>), if any; the model decides whether to add it.
  std::optional<std::int32_t> bosToken() const { return bos_; }
  // "byte-level BPE: 50257 tokens, 50000 merges, 1 added token; pre-tokenizer: ByteLevel (GPT-2 regex)"
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

  // Shared by both loaders once vocab_, merges text and added_ are filled: checks and indexes.
  Status finish(const std::string& file);
  Status addMerge(std::string_view left, std::string_view right, const std::string& where);
  void encodeSegment(std::string_view segment, std::vector<std::int32_t>& ids,
                     std::unordered_map<std::string, std::vector<std::int32_t>>& cache) const;
  void encodePiece(std::string_view pieceBytes, std::vector<std::int32_t>& ids) const;

  std::unordered_map<std::string, std::int32_t> vocab_;  // spelling → id (model vocabulary)
  std::unordered_map<std::int32_t, Entry> entries_;      // id → entry (vocabulary and added tokens)
  std::unordered_map<std::uint64_t, Merge> merges_;      // (left id << 32 | right id) → merge
  std::vector<AddedToken> added_;
  std::size_t addedOnly_ = 0;                            // added tokens whose id is not in vocab_
  std::array<std::vector<std::size_t>, 256> addedByFirstByte_;  // indexes into added_, longest first
  std::array<std::int32_t, 256> byteIds_{};              // id of each single-byte token
  std::vector<PreTokenizerStep> steps_;
  bool ignoreMerges_ = false;
  bool nfc_ = false;
  std::optional<std::int32_t> bos_;
};

}  // namespace mhascope::tokenize
