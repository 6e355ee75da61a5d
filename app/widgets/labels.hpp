// Token labels any font can draw. displayToken() (core) already spells out code points above
// U+FFFF; here, code points the loaded font lacks (CJK with DejaVu, for instance) are spelled
// "U+4E16" too, instead of ImGui's '?' box, so every token stays readable and distinguishable.
#pragma once

#include <string>
#include <string_view>

struct ImFont;

namespace mhascope::app {

std::string readableToken(std::string_view token, const ImFont* font);
// Cuts to at most maxWidth pixels (with "…"), measured with the current font.
std::string fitText(const std::string& text, float maxWidth);

}  // namespace mhascope::app
