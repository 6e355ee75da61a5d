// Text wrapped at spaces only, at the right edge of the space left (as ImGui::TextWrapped wraps).
// Dear ImGui 1.86 also breaks a line after '.', ',' and ';', which cuts numbers in two ("(0." at
// the end of one line, "28)" on the next); these never break inside a word or a number. A word
// wider than the whole line keeps its line to itself and overflows rather than being split.
#pragma once

#include <imgui.h>

#include <string>

namespace mhascope::app {

// `text` with '\n' put at spaces so no line is wider than `width` pixels in the current font.
std::string wrapAtSpaces(const std::string& text, float width);

void textWrapped(const std::string& text);
void textWrappedDisabled(const std::string& text);
void textWrappedColored(const ImVec4& color, const std::string& text);
// printf into a std::string, for the three above.
std::string formatText(const char* fmt, ...) IM_FMTARGS(1);

}  // namespace mhascope::app
