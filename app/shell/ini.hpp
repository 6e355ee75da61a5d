// Dear ImGui's window layout (imgui.ini), loaded and saved by hand: in the XDG config folder,
// validated before ImGui sees it (junk or a truncated write is ignored), written atomically.
#pragma once

#include <string>
#include <utility>

namespace mhascope::app {

class IniFile {
 public:
  void setPath(std::string path) { path_ = std::move(path); }  // empty: neither loaded nor saved
  void load();  // into the current ImGui context
  void save();  // a failed save only loses the layout: said once, then no more tries
 private:
  std::string path_;
};

}  // namespace mhascope::app
