#include "experiment_args.hpp"

#include <cmath>
#include <optional>
#include <regex>

#include "circuits_files.hpp"
#include "command_common.hpp"
#include "export/export.hpp"
#include "io/npy.hpp"
#include "model_source/model_source.hpp"
#include "options.hpp"
#include "output_folder.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {

namespace {
bool isExperimentFileName(const std::string& name) {
  static const std::regex pattern(R"((patch_[a-z-]+_(denoise|noise)|attribution_(heads|layers)|score_terms)\.(npy|png))");
  return std::regex_match(name, pattern);
}
const OutputFolderKind kExperimentExport{"--export-dir", "an experiment export", isExperimentFileName};
}  // namespace

std::uint64_t ExperimentOutputArgs::budgetBytes() const {
  return memoryBudgetMib ? *memoryBudgetMib << 20 : defaultMemoryBudget();
}

void addExperimentOutputOptions(CLI::App& cmd, ExperimentOutputArgs& o) {
  cmd.add_option("--json", o.json, "write every number to this file")->check(nonEmptyPath());
  cmd.add_flag("--force", o.force, "replace an existing --json file");
  cmd.add_option("--export-dir", o.exportDir, "write the heatmaps as .png and .npy into this folder (new, empty or an "
                                              "earlier experiment export)")
      ->check(nonEmptyPath());
  cmd.add_option("--threads", o.threads, "threads (patch: sites computed at once, each forward on one thread)")->transform(decimalInteger(1, 256))->capture_default_str();
  cmd.add_option("--memory-budget", o.memoryBudgetMib, "memory budget, MiB (default: half of the available memory, "
                 "512 MiB … 32 GiB)")
      ->transform(decimalInteger(1, 1ull << 30));
}

Result<int> answerToken(const ModelText& mt, const std::string& flag, const std::string& text) {
  return answerTokenOf(mt, flag, text);
}

Status checkExperimentOutputs(const ModelText& mt, const std::string& json, bool force, const std::string& exportDir,
                              std::filesystem::path& target) {
  if (auto s = refuseInsideModelFolder("--json", json, mt.folder.dir()); !s) return s;
  if (auto s = refuseInsideModelFolder("--export-dir", exportDir, mt.folder.dir()); !s) return s;
  if (!json.empty()) {
    if (auto s = checkJsonOutput(json, force, modelFolderFiles(mt.folder.dir())); !s) return s;
  }
  if (!exportDir.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path parent = fs::path(json).parent_path();
    if (!json.empty() && isExperimentFileName(fs::path(json).filename().string()) &&
        fs::equivalent(parent.empty() ? fs::path(".") : parent, exportDir, ec)) {
      return makeError("--json '" + json + "' is a file --export-dir '" + exportDir + "' writes; choose another name");
    }
    auto t = outputFolderTarget(kExperimentExport, exportDir);
    if (!t) return t.error();
    target = *t;
  }
  return Ok{};
}

Status writeExperimentOutputs(const std::string& json, const std::string& jsonText, const std::string& exportDir,
                              const std::filesystem::path& target, const std::vector<GridFile>& files,
                              const std::string& subtitle) {
  std::optional<OutputFolderWrite> out;
  if (!exportDir.empty()) {
    auto begun = OutputFolderWrite::begin(kExperimentExport, exportDir, target);
    if (!begun) return begun.error();
    out.emplace(std::move(*begun));
    for (const GridFile& f : files) {
      const std::string base = out->file(f.stem).string();
      if (auto s = saveNpy(base + ".npy", toTensor(f.values.data(), f.rows, f.cols)); !s) return out->abandon(s.error().message);
      Slice2D sl;
      sl.stage = StageId::Scores;  // signed numbers: the diverging map on a range symmetric about 0
      sl.rows = f.rows;
      sl.cols = f.cols;
      sl.data = f.values.data();
      sl.rowAxis = f.rowAxis;
      sl.colAxis = f.colAxis;
      sl.rowLabels = f.rowLabels;
      sl.colLabels = f.colLabels;
      ExportOptions opt;
      opt.title = f.title;
      opt.subtitle = subtitle;
      float r = f.range;
      if (!(r > 0)) {
        for (float v : f.values) r = std::isfinite(v) ? std::max(r, std::abs(v)) : r;
      }
      if (r > 0) opt.range = ColorRange{-r, r};
      if (auto s = exportHeatmap(base + ".png", sl, opt); !s) return out->abandon(s.error().message);
      if (OutputFolderWrite::interrupted()) return out->abandon("interrupted");
    }
  }
  if (!json.empty()) {
    if (auto s = writeOutputFile(json, jsonText); !s) return out ? out->abandon(s.error().message) : s.error();
  }
  if (out) {
    if (auto s = out->commit(); !s) return s;
    std::printf("wrote %zu heatmap%s (.png and .npy) into %s\n", files.size(), files.size() == 1 ? "" : "s", exportDir.c_str());
  }
  return Ok{};
}

}  // namespace mhascope::cli
