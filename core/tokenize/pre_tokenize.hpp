// The pre-tokenizers: how text is cut into pieces before BPE merges run inside each piece.
// The regexes of the byte-level BPE family are hand-written as matchers on code points (std::regex
// has no \p{L}); each one follows its regex's alternation order and backtracking exactly:
//   Gpt2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//           (GPT-2, and the ByteLevel pre-tokenizer's use_regex)
//   Llama3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2   the Llama3 regex with \p{N} (one digit) in place of \p{N}{1,3}
//   O200k   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|…)?|
//           [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|…)?|
//           \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+   (gpt-oss)
//   DeepSeek-V3's three, one after another: \p{N}{1,3}; [一-龥぀-ゟ゠-ヿ]+;
//           [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//           ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//           (the first two match only some text: the stretches between their matches are pieces too)
// the Digits pre-tokenizer (individual_digits: every \p{N} alone; otherwise runs of \p{N}), and
// the Split by a literal text with each of tokenizer.json's behaviors (Gemma's Split on " ").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mhascope::tokenize {

enum class SplitRegex { Gpt2, Llama3, Qwen2, O200k, DeepSeekDigits, DeepSeekCjk, DeepSeekWords };

// The regex source as it appears in a tokenizer.json Split pre-tokenizer (after JSON unescaping).
std::string_view splitRegexPattern(SplitRegex regex);
const char* splitRegexName(SplitRegex regex);

// Byte ranges [begin, end) of the pieces of `text` (valid UTF-8), in order, covering all of it.
using ByteSpans = std::vector<std::pair<std::size_t, std::size_t>>;
ByteSpans splitByRegex(SplitRegex regex, std::string_view text);
ByteSpans splitDigits(std::string_view text, bool individualDigits);

// What a Split does with each occurrence of its pattern, as Hugging Face's split behaviors:
// drop it, keep it as a piece of its own, join it to the piece before / after it (a run of
// occurrences: only the one next to that piece), or join a run of occurrences into one piece.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
// The pieces of `text` cut at the non-overlapping occurrences of `pattern` (not empty), left to
// right. They cover all of `text` except, with Removed, the occurrences themselves.
ByteSpans splitByText(std::string_view text, std::string_view pattern, SplitBehavior behavior);

}  // namespace mhascope::tokenize
