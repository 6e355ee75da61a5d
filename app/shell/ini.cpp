// imgui.ini in the XDG config folder, validated before ImGui sees it, saved atomically (see ini.hpp).
#include "shell/ini.hpp"

#include <imgui.h>

#include <cstdio>
#include <filesystem>
#include <string_view>

#include "util/utf8.hpp"
#include "io/file_io.hpp"

namespace mhascope::app {
namespace {

// Whether imgui.ini looks like what ImGui writes: UTF-8 text of "[Type][Name]" headers and
// "Key=Value" lines. Anything else (binary junk, a truncated write) is ignored: the app starts
// with its default layout rather than feeding ImGui garbage.
bool plausibleIni(const std::string& text) {
  if (text.size() > (1u << 20)) return false;
  if (!isValidUtf8(text)) return false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    for (char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return false;
    }
    const bool ok = line.empty() || line.front() == '[' || line.find('=') != std::string_view::npos;
    if (!ok) return false;
    pos = end + 1;
  }
  return true;
}

}  // namespace

void IniFile::load() {
  if (path_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;
  auto text = readFile(path_, 1u << 20);
  if (!text) {
    std::fprintf(stderr, "mhascope: ignoring %s (%s); starting with the default layout\n", path_.c_str(),
                 text.error().message.c_str());
    return;
  }
  if (!plausibleIni(*text)) {
    std::fprintf(stderr, "mhascope: ignoring %s: it is not a Dear ImGui settings file (corrupt?); starting "
                         "with the default layout\n", path_.c_str());
    return;
  }
  ImGui::LoadIniSettingsFromMemory(text->data(), text->size());
}

void IniFile::save() {
  ImGuiIO& io = ImGui::GetIO();
  io.WantSaveIniSettings = false;
  if (path_.empty()) return;
  std::size_t size = 0;
  const char* data = ImGui::SaveIniSettingsToMemory(&size);
  // A failed save (read-only or full disk) only loses the layout; say so once, keep going.
  if (auto st = writeFileAtomic(path_, std::string_view(data, size)); !st) {
    std::fprintf(stderr, "mhascope: cannot save the layout: %s\n", st.error().message.c_str());
    path_.clear();
  }
}

}  // namespace mhascope::app
