// Unicode NFC (canonical decomposition, canonical ordering, canonical composition), for
// tokenizer.json files whose normalizer is NFC (Qwen2's). The tables are generated into
// unicode_tables.cpp by scripts/gen_unicode_tables.py; tests compare with Python's
// unicodedata.normalize on every code point NFC changes and on random mark/jamo sequences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mhascope::tokenize {

struct CombiningClassRange {
  char32_t lo, hi;
  std::uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  std::uint32_t offset;  // into kDecompositionData
  std::uint32_t length;
};
struct Composition {
  char32_t first, second, composite;
};

extern const CombiningClassRange kCombiningClasses[];
extern const std::size_t kCombiningClassesCount;
extern const char32_t kDecompositionData[];
extern const Decomposition kDecompositions[];
extern const std::size_t kDecompositionsCount;
extern const Composition kCompositions[];
extern const std::size_t kCompositionsCount;

// `text` must be valid UTF-8; the result is its NFC form. Text below U+0300 is returned as is
// (nothing there decomposes to something that does not compose back).
std::string toNfc(std::string_view text);

}  // namespace mhascope::tokenize
