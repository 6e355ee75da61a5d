// The XDG base directories (user_dirs.hpp).
#include "util/user_dirs.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace mhascope {

namespace {

// $VAR/mhascope, else ~/<fallback>/mhascope (created); empty when neither is usable, with the
// reason in `why`.
std::string xdgDir(const char* var, const char* fallback, std::string* why) {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* xdg = std::getenv(var); xdg && *xdg) {
    dir = fs::path(xdg) / "mhascope";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / fallback / "mhascope";
  } else {
    if (why) *why = std::string("neither $") + var + " nor $HOME is set";
    return {};
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && !fs::is_directory(dir, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) {
    if (why) *why = "cannot create the folder '" + dir.string() + "': " + ec.message();
    return {};
  }
  return dir.string();
}

}  // namespace

std::string configDir() { return xdgDir("XDG_CONFIG_HOME", ".config", nullptr); }
std::string stateDir(std::string* why) { return xdgDir("XDG_STATE_HOME", ".local/state", why); }

}  // namespace mhascope
