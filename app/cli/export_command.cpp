// `mhascope export --out F.png|.svg|.pdf|.html [--stage S --head H | --weight W] [MODEL options]`: one
// stage's slice (or every head's), or a learned matrix, through the exporter the window uses. An
// HTML page holds every head of the stage unless --head names one, and carries the workspace.
#include <climits>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "command_common.hpp"
#include "commands.hpp"
#include "export/export.hpp"
#include "export/html_view.hpp"
#include "model/model_view.hpp"
#include "model_source/model_text.hpp"
#include "model_source/model_view_page.hpp"
#include "options.hpp"
#include "util/memory_budget.hpp"
#include "io/file_io.hpp"
#include "workspace_options.hpp"

namespace mhascope::cli {

namespace {

struct ExportArgs {
  std::string stage = "weights";
  std::optional<std::string> head;  // unset: head 0 on stages with heads
  int batchIndex = 0;
  std::string out;
  std::string colormap;
  std::string seeAs;   // "" = normal
  std::string weight;  // a learned matrix instead of a stage: w_q, w_k, w_v, w_o, b_q, …
  std::string view;    // "model": a model folder's every layer and head (the Model tab), as a page
};

// The picture's options from --colormap (none given: the data kind's own map) and --see-as.
Result<ExportOptions> exportOptions(const ExportArgs& a) {
  ExportOptions opt;
  if (!a.colormap.empty()) {
    auto c = colormapFromName(a.colormap);
    if (!c) return c.error();
    opt.colormap = *c;
  }
  if (!a.seeAs.empty()) {
    auto k = seeAsFromName(a.seeAs);
    if (!k) return makeError("--see-as: " + k.error().message);
    opt.seeAs = *k;
  }
  return opt;
}

Status checkOut(const std::string& out) {
  if (out.empty()) return makeError("export needs --out FILE.png|.svg|.pdf|.html");
  if (isHtmlPath(out)) return Ok{};
  if (auto f = formatFromPath(out); !f) return makeError(f.error().message + ", or .html for a page");
  return Ok{};
}

// The page, carrying the workspace of this run (so `mhascope --workspace PAGE` opens the same view).
Status writePage(const ModelOptions& mo, const ResolvedModel& r, const std::optional<Workspace>& ws,
                 const WorkspaceView& view, const std::string& out, std::vector<Slice2D> slices, bool grid,
                 const ExportOptions& opt) {
  auto carried = workspaceOfRun(mo, r, ws, view, out);
  if (!carried) return carried.error();
  HtmlExport page;
  page.slices = std::move(slices);
  page.grid = grid;
  page.options = opt;
  page.workspaceJson = workspaceToJson(*carried);
  return exportHtml(out, page);
}

// A learned matrix, as the trace recorded it (the numbers the pass used).
int cmdExportWeight(const ModelOptions& mo, const ExportArgs& a, const std::optional<Workspace>& ws) {
  const auto id = weightFromName(a.weight);
  if (!id) return fail("unknown weight '" + a.weight + "'; weights: " + weightNamesList());
  if (Status f = checkOut(a.out); !f) return fail(f.error().message);
  auto options = exportOptions(a);
  if (!options) return fail(options.error().message);
  ExportOptions opt = std::move(*options);
  OutputPlan plan;
  plan.files = {a.out};  // checked against every input, as for a stage's picture
  auto r = resolveModel(mo, plan);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  opt.subtitle = describe(*r, *t);
  auto sl = sliceWeight(*t, *id);
  if (!sl) return fail(sl.error().message);
  WorkspaceView view = ws ? ws->view : WorkspaceView{};
  view.weight = *id;
  view.seeAs = opt.seeAs;
  Status s = isHtmlPath(a.out) ? writePage(mo, *r, ws, view, a.out, {*sl}, false, opt) : exportHeatmap(a.out, *sl, opt);
  if (!s) return fail(s.error().message);
  if (auto w = saveWorkspaceIfAsked(mo, *r, ws, view); !w) return fail(w.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

// --view model: the Model tab's every layer and head on the text, with each head's role, as a page.
int cmdExportModelView(const ModelOptions& mo, const ExportArgs& a) {
  if (a.view != "model") return fail("unknown --view '" + a.view + "'; views: model (every layer and head of --model DIR)");
  if (mo.files.model.empty()) return fail("--view model needs --model DIR (a Hugging Face model folder)");
  if (!isHtmlPath(a.out)) return fail("--view model writes a page: --out must end in .html, got '" + a.out + "'");
  auto inputs = modelFolderFiles(mo.files.model);
  if (!mo.textFile.empty()) inputs.push_back({"--text-file", mo.textFile});
  for (const auto& [flag, in] : inputs) {
    if (sameFile(in, a.out)) return fail("the output '" + a.out + "' is the same file as " + flag + " '" + in + "'");
  }
  if (auto st = refuseInsideModelFolder("--out", a.out, mo.files.model); !st) return fail(st.error().message);
  const std::uint64_t budget = mo.memoryBudgetMib ? *mo.memoryBudgetMib << 20 : defaultMemoryBudget();
  auto mt = loadModelText(mo.files.model, mo.text, mo.textFile, mo.memoryBudgetMib ? *mo.memoryBudgetMib << 20 : 0);
  if (!mt) return fail(mt.error().message);
  if (!mt->textNote.empty()) warn(mt->textNote);
  model::ModelViewOptions opt;
  opt.memoryBudgetBytes = budget;
  auto v = model::computeModelView(mt->folder, mt->ids, mt->labels, opt);
  if (!v) return fail(v.error().message);
  if (Status st = exportHtml(a.out, modelViewPage(*v, mt->folder.dir())); !st) return fail(st.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

int cmdExport(const ModelOptions& mo, const ExportArgs& a, const std::optional<Workspace>& ws) {
  if (!a.view.empty()) return cmdExportModelView(mo, a);
  if (!a.weight.empty()) return cmdExportWeight(mo, a, ws);
  const auto stage = stageFromName(a.stage);
  if (!stage) return fail("unknown stage '" + a.stage + "'; stages: " + stageNamesList());
  if (Status f = checkOut(a.out); !f) return fail(f.error().message);
  if (a.head && !stageHasHeads(*stage)) {
    return fail("--head " + *a.head + " does not apply to stage '" + a.stage +
                "': it has no head axis (stages with heads: q_heads, k_heads, v_heads, scores, scaled_scores, "
                "masked_scores, weights, head_outputs); leave --head out");
  }
  int head = 0;
  // A page holds every head unless --head names one: its grid and head view compare them.
  const bool allHeads = (a.head && *a.head == "all") || (!a.head && isHtmlPath(a.out) && stageHasHeads(*stage));
  if (a.head && !allHeads) {
    auto v = parseDecimal(*a.head, "--head", 0, INT_MAX);
    if (!v) return fail(v.error().message + "; or give 'all'");
    head = static_cast<int>(*v);
  }
  auto options = exportOptions(a);
  if (!options) return fail(options.error().message);
  ExportOptions opt = std::move(*options);
  OutputPlan plan;
  plan.picture = true;
  plan.allHeads = allHeads;
  plan.files = {a.out};
  plan.recordedLatentLayer = mo.saveWeightsFile.empty();  // a stage of a latent layer: the forward's record, as run's
  auto r = resolveModel(mo, plan);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  opt.subtitle = describe(*r, *t);
  WorkspaceView view = ws ? ws->view : WorkspaceView{};
  view.stage = *stage;
  view.head = head;
  view.batch = a.batchIndex;
  if (opt.colormap) view.colormap = opt.colormap;
  view.seeAs = opt.seeAs;
  std::vector<Slice2D> slices;
  for (int h = allHeads ? 0 : head; h < (allHeads ? t->heads : head + 1); ++h) {
    auto sl = sliceStage(*t, *stage, a.batchIndex, stageHasHeads(*stage) ? h : -1);
    if (!sl) return fail(sl.error().message);
    slices.push_back(std::move(*sl));
  }
  Status s = isHtmlPath(a.out) ? writePage(mo, *r, ws, view, a.out, std::move(slices), allHeads, opt)
             : allHeads        ? exportHeadGrid(a.out, slices, opt)
                               : exportHeatmap(a.out, slices.front(), opt);
  if (!s) return fail(s.error().message);
  if (auto w = saveWeightsIfAsked(mo, *r); !w) return fail(w.error().message);
  if (auto w = saveWorkspaceIfAsked(mo, *r, ws, view); !w) return fail(w.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

// export --workspace without --stage/--weight, --head, --batch-index, --colormap, --see-as: the
// workspace's own picture (its stage, head, batch item, colormap and preview).
void defaultPictureFromWorkspace(const Workspace& ws, CLI::App& exportCmd, ExportArgs& a) {
  const bool pictureGiven = exportCmd.get_option("--stage")->count() > 0 || exportCmd.get_option("--weight")->count() > 0;
  if (!pictureGiven) a.stage = stageInfo(ws.view.stage).name;
  if (!pictureGiven && exportCmd.get_option("--head")->count() == 0 && stageHasHeads(ws.view.stage)) {
    a.head = std::to_string(ws.view.head);
  }
  if (exportCmd.get_option("--batch-index")->count() == 0 && a.weight.empty()) a.batchIndex = ws.view.batch;
  if (exportCmd.get_option("--colormap")->count() == 0 && ws.view.colormap) a.colormap = colormapName(*ws.view.colormap);
  if (exportCmd.get_option("--see-as")->count() == 0) a.seeAs = seeAsName(ws.view.seeAs);
}

}  // namespace

CommandRun addExportCommand(CLI::App& cmd, CommandContext& ctx) {
  CLI::App* exportCmd = &cmd;
  exportCmd->add_option("--save-workspace", ctx.model.saveWorkspace, kSaveWorkspaceHelp)->check(nonEmptyPath());
  auto a = std::make_shared<ExportArgs>();
  ExportArgs& ea = *a;
  exportCmd->add_option("--stage", ea.stage, "stage name: " + stageNamesList())->capture_default_str();
  exportCmd->add_option("--head", ea.head, "head index counted from 0 (default 0), or 'all' for the grid of every head; "
                                           "only for stages with a head axis");
  exportCmd->add_option("--batch-index", ea.batchIndex, "which batch item, counted from 0")
      ->transform(decimalInteger(0, INT_MAX))
      ->capture_default_str();
  exportCmd->add_option("--out", ea.out, "output file: .png, .svg, .pdf, or .html (one offline page: hover values, every head, the head view)")->required()->check(nonEmptyPath());
  exportCmd->add_option("--colormap", ea.colormap,
                        "viridis | cividis | magma | diverging | coolwarm | gray (default: by data kind)");
  exportCmd->add_option("--see-as", ea.seeAs,
                        "every colour as seen with normal | protanopia | deuteranopia | tritanopia | greyscale "
                        "(Machado et al. 2009 at full severity; default: normal)");
  exportCmd->add_option("--weight", ea.weight, "a learned matrix instead of a stage: " + weightNamesList())
      ->excludes(exportCmd->get_option("--stage"))
      ->excludes(exportCmd->get_option("--head"))
      ->excludes(exportCmd->get_option("--batch-index"));
  exportCmd->add_option("--view", ea.view, "model: every layer and head of --model DIR on the text, each head's role "
                                           "and scores (the Model tab), as one .html page")
      ->excludes(exportCmd->get_option("--weight"))
      ->excludes(exportCmd->get_option("--head"));
  return [a, exportCmd](CommandContext& c) {
    if (c.workspace) defaultPictureFromWorkspace(*c.workspace, *exportCmd, *a);
    return cmdExport(c.model, *a, c.workspace);
  };
}

}  // namespace mhascope::cli
