#include "widgets/labels.hpp"

#include <imgui.h>


#include "attention/tokenizer.hpp"
#include "util/utf8.hpp"

namespace mhascope::app {

// A code point is drawn when the font has its glyph; else it is spelled "U+XXXX". This ImGui keeps
// characters in 16 bits (ImWchar), so a character above U+FFFF (an emoji, a rare CJK ideograph) can
// have no glyph at all: ImGui would draw it as the replacement box, so it is always spelled.
std::string readableToken(std::string_view token, const ImFont* font) {
  const std::string shown = displayToken(token);
  if (!font) return shown;
  std::string out;
  out.reserve(shown.size());
  for (std::size_t i = 0; i < shown.size();) {
    const Utf8Step step = decodeUtf8Step(shown, i);
    const char32_t c = step.cp;
    const bool drawn = c < 0x80 || (c <= 0xFFFF && font->FindGlyphNoFallback(static_cast<ImWchar>(c)));
    if (drawn) out.append(shown, i, step.len);
    else out += codePointName(c);
    i += step.len;
  }
  return out;
}

std::string fitText(const std::string& text, float maxWidth) {
  if (ImGui::CalcTextSize(text.c_str()).x <= maxWidth) return text;
  const char* kEllipsis = "…";
  std::string cut = text;
  while (!cut.empty()) {
    // drop one whole UTF-8 code point from the end
    std::size_t i = cut.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(cut[i]) & 0xC0) == 0x80) --i;
    cut.resize(i);
    if (ImGui::CalcTextSize((cut + kEllipsis).c_str()).x <= maxWidth) return cut + kEllipsis;
  }
  return {};
}

}  // namespace mhascope::app
