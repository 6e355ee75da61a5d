// `run --dump`'s folder: which folder a dump may replace, and the dump written as one unit (every
// stage file and trace.json into a fresh folder beside the target, then renamed into place).
#include "dump_folder.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "interrupt_guard.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"

namespace mhascope::cli {

namespace {

// A folder `run --dump` may replace: missing, empty, or an earlier dump (trace.json, stage .npy
// files and token_ids.npy only). Anything else might be the user's and is refused.
Status checkReplaceableDump(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool stageFile = e.path().extension() == ".npy" && stageFromName(e.path().stem().string()).has_value();
    const bool dumpFile = name == "trace.json" || name == kTokenIdsFile || stageFile;
    if (!dumpFile || !e.is_regular_file()) {
      return makeError("--dump '" + dir.string() + "' already holds '" + name +
                       "', which is not part of an mhascope dump; a dump replaces the whole folder, so choose a "
                       "new or empty folder");
    }
  }
  if (ec) return makeError("cannot read folder '" + dir.string() + "': " + ec.message());
  return Ok{};
}

}  // namespace

// The folder a dump replaces: an absolute path without "." or ".." and without a trailing '/'
// (its parent holds the temporary folder, its name is what gets replaced); never the root or the
// current folder, never a file, never a folder holding anything but an earlier dump.
Result<std::filesystem::path> dumpTarget(const std::string& dumpDir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = fs::weakly_canonical(fs::absolute(dumpDir, ec), ec);
  if (ec) return makeError("--dump '" + dumpDir + "': " + ec.message());
  if (!target.has_filename() && target.has_parent_path() && target != target.root_path()) target = target.parent_path();
  if (!target.has_filename() || target == target.root_path()) {
    return makeError("--dump '" + dumpDir + "': cannot replace the root folder; name a folder for the dump");
  }
  {
    const fs::path cwd = fs::current_path(ec);
    const fs::path rel = cwd.lexically_relative(target);
    if (!ec && !rel.empty() && *rel.begin() != "..") {
      return makeError("--dump '" + dumpDir + "' is the current folder or holds it; a dump replaces its folder as a "
                       "whole, so name a subfolder (e.g. --dump out)");
    }
  }
  if (fs::exists(target, ec) && !fs::is_directory(target, ec)) {
    return makeError("--dump '" + dumpDir + "' exists and is not a folder");
  }
  if (fs::is_directory(target, ec)) {
    if (auto s = checkReplaceableDump(target); !s) return s.error();
  }
  return target;
}

Result<int> writeDump(const Trace& t, const std::string& dumpDir, const std::filesystem::path& target,
                      const std::function<nlohmann::json(nlohmann::json)>& makeDoc,
                      const std::vector<DumpExtraFile>& extra) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The dump is one unit: every file goes into a fresh folder next to the target, which is then
  // renamed into place (atomically swapped with an earlier dump). A failure, a full disk or a
  // signal leaves the earlier dump as it was and no temporary folder behind.
  const fs::path parent = target.parent_path();
  fs::create_directories(parent, ec);
  if (ec) return makeError("cannot create folder '" + parent.string() + "': " + ec.message());
  // SIGINT/SIGTERM/SIGHUP while the dump is written: the loop sees the signal between files,
  // removes its temporary folder and then dies of the same signal.
  InterruptGuard guard({SIGINT, SIGTERM, SIGHUP});
  const fs::path tmp = parent / temporaryNameFor(parent.string(), target.filename().string());
  if (!fs::create_directory(tmp, ec) || ec) {
    return makeError("cannot create folder '" + tmp.string() + "': " + (ec ? ec.message() : "it exists"));
  }
  auto abandon = [&](const std::string& message) -> Error {
    std::error_code e2;
    fs::remove_all(tmp, e2);
    if (const int sig = InterruptGuard::received()) {  // die of the signal, as the user asked, after cleaning up
      std::fprintf(stderr, "mhascope: interrupted; the dump was not written\n");
      std::signal(sig, SIG_DFL);
      std::raise(sig);
    }
    return Error{message};
  };
  nlohmann::json stages = nlohmann::json::array();
  int written = 0;
  for (const auto& st : t.stages) {
    if (InterruptGuard::received()) return abandon("interrupted");
    if (!stageRecorded(t, st.id)) continue;  // a variant not in use has no table
    ++written;
    const auto& info = stageInfo(st.id);
    const std::string file = std::string(info.name) + ".npy";
    // A lazy stage (scaled, masked) is made from the scores for its file and dropped after it.
    if (auto s = t.isLazy(st.id) ? saveNpy((tmp / file).string(), t.copyOf(st.id)) : saveNpy((tmp / file).string(), st.tensor);
        !s) {
      return abandon("--dump '" + dumpDir + "': " + s.error().message + "; the folder was left as it was");
    }
    stages.push_back({{"stage", info.name},
                      {"shape", st.tensor.shape},
                      {"axes", st.tensor.axes},
                      {"file", file},
                      {"formula", info.formula}});
  }
  for (const DumpExtraFile& f : extra) {
    if (auto s = writeFileAtomic((tmp / f.name).string(), f.bytes); !s) {
      return abandon("--dump '" + dumpDir + "': " + s.error().message + "; the folder was left as it was");
    }
  }
  const nlohmann::json doc = makeDoc(std::move(stages));
  if (auto s = writeFileAtomic((tmp / "trace.json").string(), doc.dump(2) + "\n"); !s) {
    return abandon("--dump '" + dumpDir + "': " + s.error().message + "; the folder was left as it was");
  }
  if (InterruptGuard::received()) return abandon("interrupted");
  // Into place: a plain rename when nothing is there, else an atomic exchange with the old dump.
  const fs::path& dest = target;
  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    if (errno != EEXIST && errno != ENOTEMPTY) {
      return abandon("cannot move the dump into '" + dumpDir + "': " + std::strerror(errno));
    }
    if (auto s = checkReplaceableDump(dest); !s) return abandon(s.error().message);
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0) {
      return abandon("cannot replace the dump in '" + dumpDir + "': " + std::strerror(errno));
    }
    fs::remove_all(tmp, ec);  // now the earlier dump
  }
  return written;
}

}  // namespace mhascope::cli
