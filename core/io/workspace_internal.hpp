// Shared between workspace.cpp (the JSON format) and workspace_files.cpp (the input files'
// records): the file fields of InputFiles by their flag without "--".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/input_files.hpp"

namespace mhascope::workspace_detail {

// The file fields of InputFiles by their flag without "--" (the keys of "files", as trace.json's
// input_files). Defined in workspace.cpp.
const std::vector<std::pair<const char*, std::string InputFiles::*>>& fileFields();

}  // namespace mhascope::workspace_detail
