// The folders a command writes as one unit — `run --dump`, `decode --dump`, `circuits --export-dir`:
// every file goes into a fresh hidden folder beside the target, which is renamed into place (or
// atomically exchanged with an earlier output of the same kind) only after everything else has
// succeeded. A failure, a full disk or a signal leaves the earlier output as it was and no
// temporary folder behind; a folder holding anything but an earlier output of that kind (a model
// folder, the user's own files) is refused before any work.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "util/result.hpp"

namespace mhascope::cli {

class InterruptGuard;

// What one kind of output folder is.
struct OutputFolderKind {
  const char* option;  // "--dump", for messages
  const char* what;    // "an mhascope dump", for messages
  bool (*isOwnFile)(const std::string& name);  // a file an earlier output of this kind holds
};

// The folder an output replaces, absolute, without "." or ".." or a trailing '/'. Refused: the
// root, the current folder or one holding it, a file, a folder holding anything but this kind's
// regular files, and a parent folder in which the temporary folder cannot be made (tried now, so
// a bad name fails before minutes of computing). The parent is created when missing.
Result<std::filesystem::path> outputFolderTarget(const OutputFolderKind& kind, const std::string& dir);

// One write of an output folder. While it lives, SIGINT, SIGTERM and SIGHUP are recorded instead of
// ending the process: the writer checks interrupted() between files, and abandon() or the
// destructor removes the temporary folder and then dies of the signal.
class OutputFolderWrite {
 public:
  // `target` from outputFolderTarget(kind, dir); `dir` as the user gave it, for messages.
  static Result<OutputFolderWrite> begin(const OutputFolderKind& kind, const std::string& dir,
                                         const std::filesystem::path& target);
  OutputFolderWrite(OutputFolderWrite&&) noexcept;
  OutputFolderWrite& operator=(OutputFolderWrite&&) = delete;
  OutputFolderWrite(const OutputFolderWrite&) = delete;
  OutputFolderWrite& operator=(const OutputFolderWrite&) = delete;
  ~OutputFolderWrite();

  // Where the files go until commit().
  const std::filesystem::path& folder() const { return tmp_; }
  std::filesystem::path file(const std::string& name) const { return tmp_ / name; }
  static bool interrupted();
  // Removes the temporary folder (dies of a recorded signal after that) and returns
  // "<option> '<dir>': <message>; the folder was left as it was".
  Error abandon(const std::string& message);
  // Into place: a rename when nothing is there, else an atomic exchange with the earlier output
  // (checked again to hold only this kind's files). Everything is written by then, so a signal
  // recorded meanwhile does not stop it: the destructor says the output is whole, then dies of
  // the signal.
  Status commit();

 private:
  OutputFolderWrite(const OutputFolderKind& kind, std::string dir, std::filesystem::path target);
  void cleanUp();
  OutputFolderKind kind_;
  std::string dir_;
  std::filesystem::path target_, tmp_;
  std::unique_ptr<InterruptGuard> guard_;
  bool done_ = false;
};

}  // namespace mhascope::cli
