// Whole-file reading with a size cap, and atomic writing: every file mhascope writes goes to a
// temporary file in the destination folder, every write and the close are checked, then it is
// renamed over the target — so a failed or killed save leaves any existing file intact and no
// partial file behind.
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
// True when `path` is the folder `dir` or lies inside it, both made absolute and normalised
// (symlinks of the parts that exist followed); false when either cannot be resolved.
bool isInsideFolder(const std::string& path, const std::string& dir);

// A file as the file system sees it now: "device:inode:size:mtime" ("-" when it cannot be
// stat()ed; `fd` ≥ 0: that open file instead of `path`). Two equal identities: the same file,
// unchanged as far as the file system tells (an edit moves the modification time).
std::string fileIdentity(const std::string& path, int fd = -1);

// What writeFileAtomic checks before it writes: `path` is not a folder nor a device, and its folder
// exists. Callers that write late (after minutes of work) run it first so a bad path fails at once.
Status checkWritablePath(const std::string& path);

// The window's exports never replace a file: an error naming `path` when something (a file, a
// folder, a dangling symlink) is already there, "cannot <verb> <path>: the file exists (choose
// another name; nothing was replaced)".
Status refuseToReplace(const std::string& path, const std::string& verb = "export");

// Writes bytes to path via temp file + fsync + rename. Errors name the path and the reason.
Status writeFileAtomic(const std::string& path, std::string_view bytes);

// The hidden name of the temporary file or folder that replaces `name` (a file name, no folder)
// inside `dir`: "." + name + ".tmp-<pid>-<random>", with the name cut short (at a UTF-8 character
// boundary) when the whole would pass the folder's longest name (NAME_MAX, 255 bytes on ext4), so
// any name that fits itself can be written.
// The pid and the random part keep it unique; the cut name only tells a person what it was for.
std::string temporaryNameFor(const std::string& dir, const std::string& name);

// For a process that writes files (the commands; the window may too): a signal must not leave a
// temporary file behind.
//  - SIGXFSZ (a write past `ulimit -f`) is ignored, so the write fails with EFBIG, which the writer
//    reports with the path and cleans up after, instead of the process being killed mid-file.
//  - SIGINT, SIGTERM and SIGHUP, where their action is still the default, get a handler that
//    removes the temporary file of any writeFileAtomic in progress, then lets the same signal
//    kill the process as before (its exit status says so). A handler set later (the trainer's
//    Ctrl-C, the dump's) takes precedence while it is set.
void removeTemporaryFilesOnSignals();

}  // namespace mhascope
