#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

namespace mhascope {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

// The temporary files being written now, for the signal handler below. Fixed buffers, because a
// handler may neither allocate nor follow a pointer to a string another thread is freeing; each
// slot's state is a lock-free atomic. Process-wide because a signal is.
struct TemporarySlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 holds a path to remove on a signal
  char path[PATH_MAX];
};
constexpr int kTemporarySlots = 16;  // writes in progress at once (one per thread at most)
TemporarySlot gTemporaries[kTemporarySlots];

// Registers a temporary path for the lifetime of one write. With every slot taken (never in
// practice) the write goes on unregistered: it is still atomic, only a signal may leave it behind.
class TemporaryRegistration {
 public:
  explicit TemporaryRegistration(const std::string& path) {
    if (path.size() >= sizeof(TemporarySlot::path)) return;
    for (TemporarySlot& s : gTemporaries) {
      int freeSlot = 0;
      if (s.state.compare_exchange_strong(freeSlot, 1)) {
        std::memcpy(s.path, path.c_str(), path.size() + 1);
        s.state.store(2);
        slot_ = &s;
        return;
      }
    }
  }
  ~TemporaryRegistration() {
    if (slot_) slot_->state.store(0);
  }
  TemporaryRegistration(const TemporaryRegistration&) = delete;
  TemporaryRegistration& operator=(const TemporaryRegistration&) = delete;

 private:
  TemporarySlot* slot_ = nullptr;
};

// Only async-signal-safe calls: unlink, then the default action of the same signal (SA_RESETHAND
// restored it on entry), so the process still ends the way the sender asked.
extern "C" void removeTemporariesAndDie(int sig) {
  for (TemporarySlot& s : gTemporaries) {
    if (s.state.load() == 2) ::unlink(s.path);
  }
  ::raise(sig);
}

}  // namespace

std::string temporaryNameFor(const std::string& dir, const std::string& name) {
  std::random_device rd;
  std::string suffix(".tmp-");
  suffix.append(std::to_string(::getpid())).append("-").append(std::to_string(rd()));
  // The folder's own limit (255 bytes on ext4, less on some), else the system's.
  const long limit = ::pathconf(dir.empty() ? "." : dir.c_str(), _PC_NAME_MAX);
  const std::size_t nameMax = limit > 0 ? static_cast<std::size_t>(limit) : std::size_t{NAME_MAX};
  std::string kept = name;
  if (1 + kept.size() + suffix.size() > nameMax) {
    std::size_t n = nameMax > 1 + suffix.size() ? nameMax - 1 - suffix.size() : 0;
    while (n > 0 && (static_cast<unsigned char>(kept[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 character
    kept.resize(n);
  }
  // Built with append rather than "." + std::string&&, which trips a GCC 12 -Wrestrict false positive.
  std::string tmp(".");
  tmp.append(kept).append(suffix);
  return tmp;
}

void removeTemporaryFilesOnSignals() {
  std::signal(SIGXFSZ, SIG_IGN);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    // Ignored (nohup) or handled by someone already: theirs to decide.
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = removeTemporariesAndDie;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

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

std::string fileIdentity(const std::string& path, int fd) {
  struct stat st {};
  if ((fd >= 0 ? ::fstat(fd, &st) : ::stat(path.c_str(), &st)) != 0) return "-";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

bool isInsideFolder(const std::string& path, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code e1, e2;
  const fs::path d = fs::weakly_canonical(fs::absolute(dir, e1), e1);
  const fs::path p = fs::weakly_canonical(fs::absolute(path, e2), e2);
  if (e1 || e2) return false;
  const fs::path rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

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

Status refuseToReplace(const std::string& path, const std::string& verb) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    return makeError("cannot " + verb + " " + path + ": the file exists (choose another name; nothing was replaced)");
  }
  return Ok{};
}

Status checkWritablePath(const std::string& path) {
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
  return Ok{};
}

Status writeFileAtomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  if (auto st = checkWritablePath(path); !st) return st;
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  // A hidden name next to the target, so the final rename stays on one file system.
  const std::string tmp = (dir / temporaryNameFor(dir.string(), target.filename().string())).string();
  const TemporaryRegistration removedOnSignal(tmp);
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
      if (errno == EFBIG) {
        return fail("write failed after " + std::to_string(done) + " bytes (the file size limit, `ulimit -f`, or the "
                    "file system's largest file)", errno);
      }
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
