#include "export/fonts.hpp"

namespace mhascope::export_detail {

char32_t decodeAt(std::string_view s, std::size_t& i) {
  const Utf8Step step = decodeUtf8Step(s, i);
  i += step.len;
  return step.cp;
}

// Invisible joiners and variation selectors: dropped when no font has them, rather than
// spelled out as "U+FE0F" in the middle of a label.
bool isInvisibleFormatChar(char32_t cp) {
  return cp == 0x200B || cp == 0x200C || cp == 0x200D || cp == 0x2060 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
         (cp >= 0xE0100 && cp <= 0xE01EF);
}

// Long tokens would push the heatmap off the page: keep the first code points and mark the cut.
std::string truncateLabel(const std::string& utf8, std::size_t maxCodePoints) {
  std::size_t i = 0, n = 0;
  while (i < utf8.size() && n < maxCodePoints) {
    decodeAt(utf8, i);
    ++n;
  }
  if (i >= utf8.size()) return utf8;
  return utf8.substr(0, i) + "\u2026";
}

}  // namespace mhascope::export_detail
