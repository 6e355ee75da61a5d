// Text fields over a std::string that never lose a character of the user's. This ImGui edits text as
// 16-bit characters (ImWchar), so a character above U+FFFF (an emoji, 𝔸) would come back from an
// edit as U+FFFD, and the string's tail as stray bytes. A field whose text holds one is therefore
// read-only, with the first such character named above it and a button that removes them all when
// the user asks; after an edit the text ends at its first NUL byte.
#pragma once

#include <imgui.h>

#include <string>

namespace mhascope::app {

// As ImGui::InputText, InputTextWithHint and InputTextMultiline; true when the text changed (or, with
// ImGuiInputTextFlags_EnterReturnsTrue, when Enter was pressed). The field is the last item drawn.
bool textField(const char* id, std::string* text, ImGuiInputTextFlags flags = 0);
bool textFieldWithHint(const char* id, const char* hint, std::string* text, ImGuiInputTextFlags flags = 0);
bool textBox(const char* id, std::string* text, const ImVec2& size, ImGuiInputTextFlags flags = 0);

// `text` without its characters above U+FFFF (ill-formed bytes kept as they are).
std::string withoutWideCharacters(const std::string& text);
// The first character above U+FFFF in `text`, or 0.
char32_t firstWideCharacter(const std::string& text);

}  // namespace mhascope::app
