// Whole-file reading with a size cap, and atomic writing: every file mhascope writes goes to a
// temporary file in the destination folder, every write and the close are checked, then it is
// renamed over the target — so a failed or killed save leaves any existing file intact and no
// partial file behind (BAD_INPUTS #26, #27).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace mhascope {

// Size of a regular file. Anything else is refused before it is opened (opening a FIFO blocks
// forever, /dev/zero and /dev/urandom never end, a folder has no bytes): the error names the
// path and what it is.
Result<std::uint64_t> regularFileSize(const std::string& path);

// Reads a whole regular file. Errors name the path and the reason (missing, a folder, a device
// or FIFO, larger than maxBytes, read failure). The size is checked before anything is read.
Result<std::string> readFile(const std::string& path, std::uint64_t maxBytes = (1ull << 32));

// The first min(n, size) bytes of a regular file (to read a header before deciding to read the
// rest).
Result<std::string> readFilePrefix(const std::string& path, std::uint64_t n);

// True when both paths name the same existing file (same device and inode: hard links, "./x",
// symlinks count), or, when `b` does not exist yet, the same normalised absolute path.
bool sameFile(const std::string& a, const std::string& b);

// Writes bytes to path via temp file + fsync + rename. Errors name the path and the reason.
Status writeFileAtomic(const std::string& path, std::string_view bytes);

}  // namespace mhascope
