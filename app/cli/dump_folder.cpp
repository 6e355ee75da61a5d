// `run --dump`'s folder: which files a dump holds, and the dump written as one output folder.
#include "dump_folder.hpp"

#include "io/file_io.hpp"
#include "io/npy.hpp"

namespace mhascope::cli {

namespace {

bool isDumpFile(const std::string& name) {
  const std::filesystem::path p(name);
  return name == "trace.json" || name == kTokenIdsFile ||
         (p.extension() == ".npy" && stageFromName(p.stem().string()).has_value());
}

}  // namespace

// A folder `run --dump` may replace: missing, empty, or an earlier dump (trace.json, stage .npy
// files and token_ids.npy only).
const OutputFolderKind kDumpFolder{"--dump", "an mhascope dump", isDumpFile};

Result<std::filesystem::path> dumpTarget(const std::string& dumpDir) { return outputFolderTarget(kDumpFolder, dumpDir); }

Result<int> writeDump(const Trace& t, const std::string& dumpDir, const std::filesystem::path& target,
                      const std::function<nlohmann::json(nlohmann::json)>& makeDoc,
                      const std::vector<DumpExtraFile>& extra) {
  auto out = OutputFolderWrite::begin(kDumpFolder, dumpDir, target);
  if (!out) return out.error();
  nlohmann::json stages = nlohmann::json::array();
  int written = 0;
  for (const auto& st : t.stages) {
    if (OutputFolderWrite::interrupted()) return out->abandon("interrupted");
    if (!stageRecorded(t, st.id)) continue;  // a variant not in use has no table
    ++written;
    const auto& info = stageInfo(st.id);
    const std::string file = std::string(info.name) + ".npy";
    // A lazy stage (scaled, masked) is made from the scores for its file and dropped after it.
    const std::string path = out->file(file).string();
    if (auto s = t.isLazy(st.id) ? saveNpy(path, t.copyOf(st.id)) : saveNpy(path, st.tensor); !s) {
      return out->abandon(s.error().message);
    }
    stages.push_back({{"stage", info.name},
                      {"shape", st.tensor.shape},
                      {"axes", st.tensor.axes},
                      {"file", file},
                      {"formula", stageFormula(t, st.id)}});
  }
  for (const DumpExtraFile& f : extra) {
    if (auto s = writeFileAtomic(out->file(f.name).string(), f.bytes); !s) return out->abandon(s.error().message);
  }
  const nlohmann::json doc = makeDoc(std::move(stages));
  if (auto s = writeFileAtomic(out->file("trace.json").string(), doc.dump(2) + "\n"); !s) {
    return out->abandon(s.error().message);
  }
  if (auto s = out->commit(); !s) return s.error();
  return written;
}

}  // namespace mhascope::cli
