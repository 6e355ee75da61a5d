// Wrapping at spaces only (see wrapped_text.hpp).
#include "widgets/wrapped_text.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace mhascope::app {

std::string wrapAtSpaces(const std::string& text, float width) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {  // one paragraph (up to a '\n') at a time
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line;
    std::size_t word = start;
    while (word < end) {
      std::size_t next = text.find(' ', word);
      if (next == std::string::npos || next > end) next = end;
      const std::string w = text.substr(word, next - word);
      const std::string candidate = line.empty() ? w : line + " " + w;
      if (!line.empty() && ImGui::CalcTextSize(candidate.c_str()).x > width) {
        out += line + "\n";
        line = w;
      } else {
        line = candidate;
      }
      word = next + 1;
    }
    out += line;
    if (end == text.size()) break;
    out += "\n";
    start = end + 1;
  }
  return out;
}

void textWrapped(const std::string& text) {
  ImGui::TextUnformatted(wrapAtSpaces(text, std::max(1.0f, ImGui::GetContentRegionAvail().x)).c_str());
}

void textWrappedDisabled(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  textWrapped(text);
  ImGui::PopStyleColor();
}

void textWrappedColored(const ImVec4& color, const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, color);
  textWrapped(text);
  ImGui::PopStyleColor();
}

std::string formatText(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out;
  if (n > 0) {
    std::vector<char> buf(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(buf.data(), buf.size(), fmt, args);
    out.assign(buf.data(), static_cast<std::size_t>(n));
  }
  va_end(args);
  return out;
}

}  // namespace mhascope::app
