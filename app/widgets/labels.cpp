#include "widgets/labels.hpp"

#include <imgui.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <cstdio>

#include "attention/tokenizer.hpp"

namespace mhascope::app {

std::string readableToken(std::string_view token, const ImFont* font) {
  const std::string shown = displayToken(token);
  if (!font) return shown;
  std::string out;
  out.reserve(shown.size());
  const char* p = shown.c_str();
  const char* end = p + shown.size();
  while (p < end) {
    unsigned int c = 0;
    const int n = ImTextCharFromUtf8(&c, p, end);
    if (n <= 0) break;
    if (c < 0x80 || font->FindGlyphNoFallback(static_cast<ImWchar>(c))) {
      out.append(p, static_cast<std::size_t>(n));
    } else {
      char buf[16];
      std::snprintf(buf, sizeof buf, "U+%04X", c);
      out += buf;
    }
    p += n;
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
