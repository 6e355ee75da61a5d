// Text fields that keep characters above U+FFFF (text_field.hpp).
#include "widgets/text_field.hpp"

#include <imgui_stdlib.h>

#include "util/utf8.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

constexpr char32_t kWidestEditable = 0xFFFF;

// Above a field whose text holds a character this ImGui cannot edit: what and why, and the button that
// removes them. Returns the flags the field is drawn with (read-only then); `removed` true when clicked.
ImGuiInputTextFlags guard(const char* id, std::string* text, ImGuiInputTextFlags flags, bool& removed) {
  removed = false;
  const char32_t wide = firstWideCharacter(*text);
  if (wide == 0) return flags;
  textWrappedDisabled("Read-only: this text holds " + codePointName(wide) +
                      ", a character above U+FFFF, which an edit here would lose.");
  ImGui::PushID(id);
  if (ImGui::SmallButton("Remove such characters to edit")) {
    *text = withoutWideCharacters(*text);
    removed = true;
  }
  ImGui::PopID();
  return removed ? flags : flags | ImGuiInputTextFlags_ReadOnly;
}

bool trimmed(bool changed, std::string* text) {
  if (changed) {
    if (const std::size_t nul = text->find('\0'); nul != std::string::npos) text->resize(nul);
  }
  return changed;
}

}  // namespace

char32_t firstWideCharacter(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Step step = decodeUtf8Step(text, i);
    if (step.valid && step.cp > kWidestEditable) return step.cp;
    i += step.len;
  }
  return 0;
}

std::string withoutWideCharacters(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Step step = decodeUtf8Step(text, i);
    if (!(step.valid && step.cp > kWidestEditable)) out.append(text, i, step.len);
    i += step.len;
  }
  return out;
}

bool textField(const char* id, std::string* text, ImGuiInputTextFlags flags) {
  bool removed = false;
  flags = guard(id, text, flags, removed);
  return trimmed(ImGui::InputText(id, text, flags), text) || removed;
}

bool textFieldWithHint(const char* id, const char* hint, std::string* text, ImGuiInputTextFlags flags) {
  bool removed = false;
  flags = guard(id, text, flags, removed);
  return trimmed(ImGui::InputTextWithHint(id, hint, text, flags), text) || removed;
}

bool textBox(const char* id, std::string* text, const ImVec2& size, ImGuiInputTextFlags flags) {
  bool removed = false;
  flags = guard(id, text, flags, removed);
  return trimmed(ImGui::InputTextMultiline(id, text, size, flags), text) || removed;
}

}  // namespace mhascope::app
