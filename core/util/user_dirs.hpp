// The user's folders for what mhascope keeps between launches (the XDG base directories): the
// window's layout and recent files, the last workspace, the practice progress.
#pragma once

#include <string>

namespace mhascope {

// $XDG_CONFIG_HOME/mhascope (or ~/.config/mhascope), created if missing; empty when neither
// variable is set or the folder cannot be made (then what would go there is simply not saved).
std::string configDir();
// $XDG_STATE_HOME/mhascope (or ~/.local/state/mhascope), created if missing: the last workspace.
// `why` (if given) gets the reason when the folder cannot be created: "cannot create the folder '…': …".
std::string stateDir(std::string* why = nullptr);

}  // namespace mhascope
