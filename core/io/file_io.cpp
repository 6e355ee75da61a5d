#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <algorithm>

namespace mhascope {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

}  // namespace

Result<std::uint64_t> regularFileSize(const std::string& path) {
  if (path.empty()) return makeError("no file path given");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return makeError("cannot open '" + path + "': " + errnoText(errno));
  }
  if (S_ISDIR(st.st_mode)) return makeError("cannot read '" + path + "': it is a folder, not a file");
  if (S_ISFIFO(st.st_mode)) {
    return makeError("cannot read '" + path + "': it is a FIFO (named pipe), not a regular file");
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return makeError("cannot read '" + path + "': it is a device, not a regular file");
  }
  if (S_ISSOCK(st.st_mode)) return makeError("cannot read '" + path + "': it is a socket, not a regular file");
  if (!S_ISREG(st.st_mode)) return makeError("cannot read '" + path + "': not a regular file");
  return static_cast<std::uint64_t>(st.st_size);
}

namespace {

// Reads at most `limit` bytes; `what` says whether a longer file is an error (whole reads).
Result<std::string> readUpTo(const std::string& path, std::uint64_t limit, bool wholeFile) {
  auto size = regularFileSize(path);
  if (!size) return size.error();
  if (wholeFile && *size > limit) {
    return makeError("'" + path + "' is " + std::to_string(*size) + " bytes, more than the limit of " +
                     std::to_string(limit));
  }
  // O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not hang.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return makeError("cannot open '" + path + "': " + errnoText(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError("cannot read '" + path + "': not a regular file");
  }
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(limit, *size)));
  char buf[1 << 16];
  for (;;) {
    const std::uint64_t want = std::min<std::uint64_t>(sizeof buf, limit + (wholeFile ? 1 : 0) - bytes.size());
    if (want == 0) break;
    const ssize_t n = ::read(fd, buf, static_cast<std::size_t>(want));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return makeError("cannot read '" + path + "': " + errnoText(err));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (wholeFile && bytes.size() > limit) {  // the file grew since the stat
      ::close(fd);
      return makeError("'" + path + "' is larger than the limit of " + std::to_string(limit) + " bytes");
    }
  }
  ::close(fd);
  return bytes;
}

}  // namespace

Result<std::string> readFile(const std::string& path, std::uint64_t maxBytes) {
  return readUpTo(path, maxBytes, true);
}

Result<std::string> readFilePrefix(const std::string& path, std::uint64_t n) { return readUpTo(path, n, false); }

bool sameFile(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  if (a.empty() || b.empty()) return false;
  struct stat sa {}, sb {};
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  std::error_code e1, e2;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, e1), e1);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, e2), e2);
  return !e1 && !e2 && pa == pb;
}

Status writeFileAtomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) return makeError("no output path given");
  std::error_code ec;
  const fs::path target(path);
  if (fs::is_directory(target, ec)) {
    return makeError("cannot write '" + path + "': it is a folder; give a file name");
  }
  if (fs::exists(target, ec) && !fs::is_regular_file(target, ec)) {
    // e.g. /dev/full: renaming over a device node would replace it, so refuse instead.
    return makeError("cannot write '" + path + "': it exists and is not a regular file");
  }
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::exists(dir, ec)) {
    return makeError("cannot write '" + path + "': folder '" + dir.string() + "' does not exist");
  }
  if (!fs::is_directory(dir, ec)) {
    return makeError("cannot write '" + path + "': '" + dir.string() + "' is not a folder");
  }
  std::random_device rd;
  // A hidden name next to the target, so the final rename stays on one file system. (Built with
  // append rather than "." + std::string&&, which trips a GCC 12 -Wrestrict false positive.)
  std::string tmpName(".");
  tmpName.append(target.filename().string()).append(".tmp-").append(std::to_string(::getpid()));
  tmpName.append("-").append(std::to_string(rd()));
  const std::string tmp = (dir / tmpName).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return makeError("cannot write '" + path + "': " + errnoText(errno));
  auto fail = [&](const std::string& what, int err) -> Status {
    ::close(fd);
    ::unlink(tmp.c_str());
    return makeError("cannot write '" + path + "': " + what + ": " + errnoText(err));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed", errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return fail("flush failed", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return makeError("cannot write '" + path + "': close failed: " + errnoText(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return makeError("cannot write '" + path + "': " + errnoText(err));
  }
  return Ok{};
}

}  // namespace mhascope
