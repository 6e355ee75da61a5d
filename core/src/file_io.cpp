#include "mhascope/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

namespace mhascope {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

}  // namespace

Result<std::string> readFile(const std::string& path, std::uint64_t maxBytes) {
  if (path.empty()) return makeError("no file path given");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return makeError("cannot open '" + path + "': " + errnoText(errno));
  }
  if (S_ISDIR(st.st_mode)) return makeError("cannot read '" + path + "': it is a folder, not a file");
  if (static_cast<std::uint64_t>(st.st_size) > maxBytes) {
    return makeError("'" + path + "' is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                     std::to_string(maxBytes));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return makeError("cannot open '" + path + "': " + errnoText(errno));
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return makeError("cannot read '" + path + "': " + errnoText(err));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (bytes.size() > maxBytes) {
      ::close(fd);
      return makeError("'" + path + "' is larger than the limit of " + std::to_string(maxBytes) + " bytes");
    }
  }
  ::close(fd);
  return bytes;
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
