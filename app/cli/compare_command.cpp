// `mhascope compare` (compare_command.hpp).
#include "options.hpp"
#include "commands.hpp"
#include "compare_command.hpp"

#include <climits>
#include <cstdio>
#include <optional>

#include "attention/compare.hpp"
#include "command_common.hpp"
#include "export/compare_figure.hpp"

namespace mhascope::cli {

namespace {

void addCompareOptions(CLI::App* cmd, CompareArgs& a) {
  cmd->add_option("--stage", a.stage, "stage name: " + stageNamesList())->capture_default_str();
  cmd->add_option("--head", a.head, "the head drawn in the picture, counted from 0 (default 0); the printed maximum "
                                    "is over every head")
      ->transform(decimalInteger(0, INT_MAX));
  cmd->add_option("--batch-index", a.batchIndex, "which batch item, counted from 0")
      ->transform(decimalInteger(0, INT_MAX))
      ->capture_default_str();
  cmd->add_option("--out", a.out, "the picture A | B | B − A: .png, .svg or .pdf")->check(nonEmptyPath());
  cmd->add_option("--colormap", a.colormap, "A's and B's colormap (default: by data kind); B − A is always diverging");
  cmd->add_option("--b-seed", a.bSeed, "side B: A with this seed (0 to 2^64-1)")->transform(decimalInteger(0, ULLONG_MAX));
  cmd->add_option("--b-heads", a.bHeads, "side B: A with this many heads h")->transform(decimalInteger(INT_MIN, INT_MAX));
  cmd->add_option("--b-kv-heads", a.bKvHeads, "side B: A with N K/V heads")->transform(decimalInteger(INT_MIN, INT_MAX));
  cmd->add_option("--b-positions", a.bPositions, "side B: A with these positions: sinusoidal | rope | alibi | none");
  cmd->add_option("--b-mask", a.bMask, "side B: A with this mask: none | causal")->check(CLI::IsMember({"none", "causal"}));
  cmd->add_option("--b-preset", a.bPreset, "side B: this preset (name or .json) instead of A's options");
  cmd->add_option("--b-checkpoint", a.bCheckpoint, "side B: this checkpoint instead of A's options (another step of "
                                                   "a run: another of its checkpoints)")
      ->check(nonEmptyPath())
      ->excludes(cmd->get_option("--b-preset"));
  cmd->add_option("--b-layer", a.bLayer, "with --b-checkpoint: its layer (default: A's --layer, else 0)")
      ->transform(decimalInteger(0, INT_MAX));
}

}  // namespace

CommandRun addCompareCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<CompareArgs>();
  addCompareOptions(&cmd, *a);
  return [a](CommandContext& ctx) { return cmdCompare(ctx.model, *a); };
}

ModelOptions sideBOptions(const ModelOptions& a, const CompareArgs& args) {
  ModelOptions b = a;
  if (args.bCheckpoint || args.bPreset) {
    // A model of its own: nothing of A's model comes along but the memory budget.
    b = ModelOptions{};
    b.memoryBudgetMib = a.memoryBudgetMib;
    if (args.bPreset) {
      b.preset = *args.bPreset;
      b.presetGiven = true;
    } else {
      b.files.checkpoint = *args.bCheckpoint;
      b.files.layer = args.bLayer ? args.bLayer : a.files.layer;
    }
  }
  if (args.bSeed) b.seed = args.bSeed;
  if (args.bHeads) b.heads = args.bHeads;
  if (args.bKvHeads) b.kvHeads = args.bKvHeads;
  if (args.bPositions) b.positions = args.bPositions;
  if (args.bMask) b.mask = args.bMask;
  b.saveWeightsFile.clear();
  b.saveWorkspace.clear();
  return b;
}

namespace {

// The head a side draws, or an error naming the side and its heads.
Result<int> headOf(const Trace& t, StageId stage, int head, const char* side) {
  if (!stageHasHeads(stage)) return -1;
  if (!stageRecorded(t, stage)) return head;  // nothing to draw: the comparison says why
  const long long heads = t.shapeOf(stage)[1];
  if (head >= heads) {
    return makeError("--head " + std::to_string(head) + " is out of range for side " + side + ": its '" +
                     stageInfo(stage).name + "' has " + std::to_string(heads) + " heads (0 .. " +
                     std::to_string(heads - 1) + ")");
  }
  return head;
}

}  // namespace

int cmdCompare(const ModelOptions& mo, const CompareArgs& a) {
  const auto stage = stageFromName(a.stage);
  if (!stage) return fail("unknown stage '" + a.stage + "'; stages: " + stageNamesList());
  if (a.head && !stageHasHeads(*stage)) {
    return fail("--head " + std::to_string(*a.head) + " does not apply to stage '" + a.stage + "': it has no head axis");
  }
  if (!a.out.empty()) {
    if (auto f = formatFromPath(a.out); !f) return fail(f.error().message);
  }
  const bool changesB = a.bSeed || a.bHeads || a.bKvHeads || a.bPositions || a.bMask || a.bPreset || a.bCheckpoint;
  if (!changesB) {
    return fail("compare needs a side B: give what differs (--b-seed, --b-heads, --b-kv-heads, --b-positions, "
                "--b-mask) or another model (--b-preset, --b-checkpoint)");
  }
  if (a.bLayer && !a.bCheckpoint) return fail("--b-layer " + std::to_string(*a.bLayer) + " needs --b-checkpoint");
  std::optional<ColormapId> colormap;
  if (!a.colormap.empty()) {
    auto c = colormapFromName(a.colormap);
    if (!c) return fail(c.error().message);
    colormap = *c;
  }
  OutputPlan plan;
  plan.picture = !a.out.empty();
  if (!a.out.empty()) plan.files = {a.out};
  auto ra = resolveModel(mo, plan);
  if (!ra) return fail(ra.error().message);
  auto rb = resolveModel(sideBOptions(mo, a), plan);
  if (!rb) return fail("side B: " + rb.error().message);
  auto ta = computeTrace(*ra);
  if (!ta) return fail(ta.error().message);
  auto tb = computeTrace(*rb);
  if (!tb) return fail("side B: " + tb.error().message);

  // A head that one side does not have is refused before anything is printed, with --out or without.
  auto ha = headOf(*ta, *stage, a.head.value_or(0), "A");
  if (!ha) return fail(ha.error().message);
  auto hb = headOf(*tb, *stage, a.head.value_or(0), "B");
  if (!hb) return fail(hb.error().message);

  const std::string lineA = describe(*ra, *ta), lineB = describe(*rb, *tb);
  std::printf("A: %s\nB: %s\n", lineA.c_str(), lineB.c_str());
  const int batch = a.batchIndex;
  std::printf("stage %s, batch item %d\n", stageInfo(*stage).name, batch);
  const std::string blocker = differenceBlocker(*ta, *tb, *stage);
  std::string words;
  if (!blocker.empty()) {
    std::printf("no difference map: %s\n", blocker.c_str());
  } else {
    auto m = stageMaxDifference(*ta, *tb, *stage, batch);
    if (!m) return fail(m.error().message);
    auto labels = sliceStage(*ta, *stage, batch, m->head < 0 ? 0 : m->head);
    if (!labels) return fail(labels.error().message);
    words = differenceWords(*m, *labels);
    std::printf("%s\n", words.c_str());
  }
  if (a.out.empty()) return 0;
  if (!stageRecorded(*ta, *stage) || !stageRecorded(*tb, *stage)) {
    return fail("cannot draw '" + a.stage + "': " + blocker);
  }
  auto sa = sliceStage(*ta, *stage, batch, *ha < 0 ? 0 : *ha);
  if (!sa) return fail(sa.error().message);
  auto sb = sliceStage(*tb, *stage, batch, *hb < 0 ? 0 : *hb);
  if (!sb) return fail("side B: " + sb.error().message);
  ComparisonPicture pic;
  pic.a = &*sa;
  pic.b = &*sb;
  pic.titleA = "A · " + nameSlice(*sa).title;
  pic.titleB = "B · " + nameSlice(*sb).title;
  pic.subtitleA = lineA;
  pic.subtitleB = lineB;
  pic.colormap = colormap;
  std::optional<SliceDifference> diff;
  std::string noDiff = blocker;
  if (blocker.empty()) {
    auto d = sliceDifference(*sa, *sb);
    if (d) {
      diff = std::move(*d);
    } else {
      noDiff = d.error().message;
    }
  }
  if (diff) {
    pic.difference = &*diff;
    pic.differenceTitle = "B − A · " + nameSlice(*sa).title;
    pic.differenceSubtitle = "this map: " + differenceWords(diff->max, *sa) + "\none scale centred on 0: ±" +
                             formatDifference(diff->hi) +
                             (diff->oneSided ? "\n" + std::to_string(diff->oneSided) + " cells blocked on one side only (not compared)" : "");
    if (*ha >= 0) std::printf("head %d in the picture: %s\n", *ha, differenceWords(diff->max, *sa).c_str());
  } else {
    pic.noDifferenceReason = noDiff;
  }
  if (Status s = exportComparison(a.out, pic); !s) return fail(s.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

}  // namespace mhascope::cli
