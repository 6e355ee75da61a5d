// The Unicode classes the pre-tokenizer regexes need (std::regex has no \p{L}): letters \p{L},
// numbers \p{N} and whitespace \s (the White_Space property, as Oniguruma and Python's `regex`
// read \s), and for the o200k regex the upper-case and title-case letters \p{Lu}\p{Lt}, the
// lower-case \p{Ll} and the marks \p{M}, and for DeepSeek-V3's punctuation and symbols \p{P}\p{S}. The ranges are generated into unicode_class_tables.cpp by
// scripts/gen_unicode_tables.py; ASCII, by far the most common case, is answered without a search.
#pragma once

#include <algorithm>
#include <cstddef>

namespace mhascope::tokenize {

struct CodePointRange {
  char32_t lo;  // inclusive
  char32_t hi;  // inclusive
};

extern const CodePointRange kLetterRanges[];
extern const std::size_t kLetterRangesCount;
extern const CodePointRange kNumberRanges[];
extern const std::size_t kNumberRangesCount;
extern const CodePointRange kWhitespaceRanges[];
extern const std::size_t kWhitespaceRangesCount;
extern const CodePointRange kUpperRanges[];  // Lu, Lt
extern const std::size_t kUpperRangesCount;
extern const CodePointRange kLowerRanges[];  // Ll
extern const std::size_t kLowerRangesCount;
extern const CodePointRange kMarkRanges[];   // Mn, Mc, Me
extern const std::size_t kMarkRangesCount;
extern const CodePointRange kPunctuationSymbolRanges[];  // P*, S*
extern const std::size_t kPunctuationSymbolRangesCount;

inline bool inRanges(const CodePointRange* ranges, std::size_t count, char32_t cp) {
  const CodePointRange* end = ranges + count;
  // First range whose upper end is >= cp; cp is in the class when that range starts at or below it.
  const CodePointRange* it =
      std::lower_bound(ranges, end, cp, [](const CodePointRange& r, char32_t c) { return r.hi < c; });
  return it != end && it->lo <= cp;
}

inline bool isLetter(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return inRanges(kLetterRanges, kLetterRangesCount, cp);
}

inline bool isNumber(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return inRanges(kNumberRanges, kNumberRangesCount, cp);
}

inline bool isWhitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return inRanges(kWhitespaceRanges, kWhitespaceRangesCount, cp);
}

// \p{Lu}\p{Lt}
inline bool isUpperLetter(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  return inRanges(kUpperRanges, kUpperRangesCount, cp);
}

// \p{Ll}
inline bool isLowerLetter(char32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  return inRanges(kLowerRanges, kLowerRangesCount, cp);
}

// \p{M}
inline bool isMark(char32_t cp) { return cp >= 0x300 && inRanges(kMarkRanges, kMarkRangesCount, cp); }

// \p{P}\p{S}
inline bool isPunctuationOrSymbol(char32_t cp) {
  return inRanges(kPunctuationSymbolRanges, kPunctuationSymbolRangesCount, cp);
}

}  // namespace mhascope::tokenize
