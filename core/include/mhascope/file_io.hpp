// Whole-file reading with a size cap, and atomic writing: every file mhascope writes goes to a
// temporary file in the destination folder, every write and the close are checked, then it is
// renamed over the target — so a failed or killed save leaves any existing file intact and no
// partial file behind (BAD_INPUTS #26, #27).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mhascope/result.hpp"

namespace mhascope {

// Reads a whole regular file. Errors name the path and the reason (missing, a folder, larger
// than maxBytes, read failure).
Result<std::string> readFile(const std::string& path, std::uint64_t maxBytes = (1ull << 32));

// Writes bytes to path via temp file + fsync + rename. Errors name the path and the reason.
Status writeFileAtomic(const std::string& path, std::string_view bytes);

}  // namespace mhascope
