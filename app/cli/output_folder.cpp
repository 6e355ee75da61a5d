// Output folders written as one unit (output_folder.hpp).
#include "output_folder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "interrupt_guard.hpp"
#include "io/file_io.hpp"

namespace mhascope::cli {

namespace fs = std::filesystem;

namespace {

std::string named(const OutputFolderKind& kind, const std::string& dir) {
  return std::string(kind.option) + " '" + dir + "'";
}

// Missing, empty, or an earlier output of this kind: anything else might be the user's.
Status checkReplaceable(const OutputFolderKind& kind, const std::string& dir, const fs::path& target) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(target, ec)) {
    const std::string name = e.path().filename().string();
    if (!kind.isOwnFile(name) || e.is_symlink() || !e.is_regular_file()) {
      return makeError(named(kind, dir) + " already holds '" + name + "', which is not part of " + kind.what +
                       "; the output replaces the whole folder, so choose a new or empty folder");
    }
  }
  if (ec) return makeError("cannot read folder '" + target.string() + "': " + ec.message());
  return Ok{};
}

fs::path temporaryFolder(const fs::path& target) {
  return target.parent_path() / temporaryNameFor(target.parent_path().string(), target.filename().string());
}

}  // namespace

Result<fs::path> outputFolderTarget(const OutputFolderKind& kind, const std::string& dir) {
  std::error_code ec;
  fs::path target = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) return makeError(named(kind, dir) + ": " + ec.message());
  if (!target.has_filename() && target.has_parent_path() && target != target.root_path()) target = target.parent_path();
  if (!target.has_filename() || target == target.root_path()) {
    return makeError(named(kind, dir) + ": cannot replace the root folder; name a folder for the output");
  }
  {
    const fs::path cwd = fs::current_path(ec);
    if (!ec && isInsideFolder(cwd.string(), target.string())) {
      return makeError(named(kind, dir) + " is the current folder or holds it; the output replaces its folder as a "
                       "whole, so name a subfolder (e.g. " + kind.option + " out)");
    }
  }
  if (fs::exists(target, ec) && !fs::is_directory(target, ec)) return makeError(named(kind, dir) + " exists and is not a folder");
  if (fs::is_directory(target, ec)) {
    if (auto s = checkReplaceable(kind, dir, target); !s) return s.error();
  }
  const fs::path parent = target.parent_path();
  fs::create_directories(parent, ec);
  if (ec) return makeError("cannot create folder '" + parent.string() + "': " + ec.message());
  // The temporary folder must be possible where it will be made: tried now and removed.
  const fs::path probe = temporaryFolder(target);
  if (!fs::create_directory(probe, ec) || ec) {
    return makeError("cannot create folder '" + probe.string() + "': " + (ec ? ec.message() : "it exists"));
  }
  fs::remove(probe, ec);
  return target;
}

OutputFolderWrite::OutputFolderWrite(const OutputFolderKind& kind, std::string dir, fs::path target)
    : kind_(kind), dir_(std::move(dir)), target_(std::move(target)) {}

OutputFolderWrite::OutputFolderWrite(OutputFolderWrite&& o) noexcept
    : kind_(o.kind_), dir_(std::move(o.dir_)), target_(std::move(o.target_)), tmp_(std::move(o.tmp_)),
      guard_(std::move(o.guard_)), done_(o.done_) {
  o.done_ = true;
}

Result<OutputFolderWrite> OutputFolderWrite::begin(const OutputFolderKind& kind, const std::string& dir, const fs::path& target) {
  OutputFolderWrite w(kind, dir, target);
  w.guard_ = std::make_unique<InterruptGuard>(std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP});
  w.tmp_ = temporaryFolder(target);
  std::error_code ec;
  if (!fs::create_directory(w.tmp_, ec) || ec) {
    w.done_ = true;  // nothing of ours to remove
    return makeError("cannot create folder '" + w.tmp_.string() + "': " + (ec ? ec.message() : "it exists"));
  }
  return w;
}

OutputFolderWrite::~OutputFolderWrite() {
  if (!done_) {
    cleanUp();
  } else if (const int sig = guard_ ? InterruptGuard::received() : 0) {
    // The signal came after the last file: the output is whole and in place, so say that, then end
    // as the signal asks.
    std::fprintf(stderr, "mhascope: interrupted after %s was written whole\n", named(kind_, dir_).c_str());
    guard_.reset();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

bool OutputFolderWrite::interrupted() { return InterruptGuard::received() != 0; }

void OutputFolderWrite::cleanUp() {
  done_ = true;
  std::error_code ec;
  if (!tmp_.empty()) fs::remove_all(tmp_, ec);
  if (const int sig = InterruptGuard::received()) {  // die of the signal, as the user asked, after cleaning up
    std::fprintf(stderr, "mhascope: interrupted; %s was not written\n", named(kind_, dir_).c_str());
    guard_.reset();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

Error OutputFolderWrite::abandon(const std::string& message) {
  cleanUp();
  return Error{named(kind_, dir_) + ": " + message + "; the folder was left as it was"};
}

Status OutputFolderWrite::commit() {
  if (done_) return makeError(named(kind_, dir_) + ": written already");
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    if (errno != EEXIST && errno != ENOTEMPTY) return abandon(std::string("cannot move it into place: ") + std::strerror(errno));
    if (auto s = checkReplaceable(kind_, dir_, target_); !s) {
      cleanUp();
      return s.error();
    }
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
      return abandon(std::string("cannot replace the earlier output: ") + std::strerror(errno));
    }
    std::error_code ec;
    fs::remove_all(tmp_, ec);  // now the earlier output
  }
  done_ = true;  // the guard stays until the writer is gone: a signal from here on is reported then
  return Ok{};
}

}  // namespace mhascope::cli
