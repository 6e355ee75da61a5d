// The Compare tab: the stage on screen (A) beside the same stage of a second model (B) and their
// difference B − A on one scale symmetric about 0, with linked hover (the cell under the mouse lit
// in all three maps, its two values and their difference in words). B is chosen here: a changed
// copy of A (seed, positions, mask, h, K/V heads) or a file (preset, workspace, checkpoint) through
// the window's own open path. B is computed by its own scheduler (shell/compare_compute.cpp); this
// file only lays out the two results, the difference core made (state/compare_state.hpp) and the
// view.
#include "panels/compare_panel.hpp"

#include "io/file_io.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

#include "render/texture_keys.hpp"
#include "export/compare_figure.hpp"
#include "panels/panel.hpp"
#include "state/compare_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/text_field.hpp"

namespace mhascope::app {
namespace {


constexpr const char* kPositions[] = {"sinusoidal", "rope", "alibi", "none"};

// A field of width `w` set just before it: its frame alone (not its label on the right), for the
// input scripts' clicks.
void recordField(UiContext& ctx, const std::string& name, float w) {
  const ImVec2 min = ImGui::GetItemRectMin();
  ctx.probes.recordRect(name, min, ImVec2(min.x + w, ImGui::GetItemRectMax().y));
}

// "Compare with…": B as a changed copy of A, or a file.
void sourceForm(UiContext& ctx, CompareState& c) {
  const float em = ImGui::GetFontSize();
  if (ImGui::Button("B = copy of A")) compareWithCopyOfA(c, ctx.state);
  ctx.probes.recordLastItem("compare_copy_a");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("B becomes A's configuration and files; then change what should differ.");
  if (c.active()) {
    ImGui::SameLine();
    if (ImGui::Button("Close B")) closeCompare(c);
    ctx.probes.recordLastItem("compare_close");
  }
  if (c.active()) {
    ModelConfig& cfg = c.b.doc.config;
    // A checkpoint or a trained layer from the Train mode decides every one of these.
    const bool fixed = !c.b.doc.files.checkpoint.empty() || c.b.doc.trainedLayer != nullptr;
    ImGui::BeginDisabled(fixed);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("B:");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(7 * em);
    if (ImGui::InputScalar("seed", ImGuiDataType_U64, &cfg.seed, nullptr, nullptr, "%llu",
                           ImGuiInputTextFlags_AutoSelectAll)) {
      compareEdited(c);
    }
    recordField(ctx, "compare_seed", 7 * em);
    sameLineOrWrap(10 * em, em);
    ImGui::SetNextItemWidth(7 * em);
    const std::string positions = positionsName(cfg);
    const bool open = ImGui::BeginCombo("positions", positions.c_str());
    recordField(ctx, "compare_positions", 7 * em);
    if (open) {
      for (const char* p : kPositions) {
        if (ImGui::Selectable(p, positions == p) && setPositions(cfg, p)) compareEdited(c);
        ctx.probes.recordLastItem(std::string("compare_positions_") + p);
      }
      ImGui::EndCombo();
    }
    sameLineOrWrap(6 * em, em);
    bool causal = cfg.mask == MaskKind::Causal;
    if (ImGui::Checkbox("causal", &causal)) {
      cfg.mask = causal ? MaskKind::Causal : MaskKind::None;
      compareEdited(c);
    }
    ctx.probes.recordLastItem("compare_causal");
    sameLineOrWrap(6 * em, em);
    ImGui::SetNextItemWidth(3 * em);
    if (ImGui::InputInt("h", &cfg.heads, 0, 0, ImGuiInputTextFlags_AutoSelectAll)) compareEdited(c);
    recordField(ctx, "compare_heads", 3 * em);
    sameLineOrWrap(9 * em, em);
    ImGui::SetNextItemWidth(3 * em);
    if (ImGui::InputInt("K/V heads (0 = h)", &cfg.kvHeads, 0, 0, ImGuiInputTextFlags_AutoSelectAll)) compareEdited(c);
    recordField(ctx, "compare_kv_heads", 3 * em);
    ImGui::EndDisabled();
    if (fixed && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      ImGui::SetTooltip("B is a trained layer: its weights decide these. Close B, then \"B = copy of A\" of a configuration.");
    }
  }
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("or B from a file:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(8 * em, ImGui::GetContentRegionAvail().x - 16 * em));
  const bool enter = textField("##compare_path", &c.pathField, ImGuiInputTextFlags_EnterReturnsTrue);
  ctx.probes.recordLastItem("compare_path");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("a preset .json, a workspace .json or a checkpoint .safetensors");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(2.5f * em);
  ImGui::InputInt("layer", &c.layer, 0, 0, ImGuiInputTextFlags_AutoSelectAll);
  recordField(ctx, "compare_layer", 2.5f * em);
  ImGui::SameLine();
  if ((ImGui::Button("Open as B") || enter) && !c.pathField.empty()) compareWithFile(c, ctx.state, c.pathField, c.layer);
  ctx.probes.recordLastItem("compare_open");
  if (!c.message.empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", c.message.c_str());
  ctx.probes.recordLabel("compare_message", c.message);
}

// A and B's configuration lines, B's state (computing, an error).
void sidesLines(UiContext& ctx, CompareState& c) {
  const std::string a = configLine(ctx.state);
  ImGui::TextColored(ImVec4(0.6f, 0.8f, 1, 1), "A");
  ImGui::SameLine();
  ImGui::TextWrapped("%s", a.c_str());
  ctx.probes.recordLabel("compare_a_config", a);
  const std::string b = c.b.shown.hasTrace() ? configLine(c.b) : std::string();
  ImGui::TextColored(ImVec4(1, 0.75f, 0.5f, 1), "B");
  ImGui::SameLine();
  if (c.source == CompareSource::File) {
    ImGui::TextDisabled("%s:", c.fileName.c_str());
    ImGui::SameLine();
  }
  ImGui::TextWrapped("%s", b.empty() ? "(no picture yet)" : b.c_str());
  ctx.probes.recordLabel("compare_b_config", b);
  // The texts each side runs on (a model folder's layer on one text each: the Experiments tab's clean and corrupted).
  ctx.probes.recordLabel("compare_a_text", ctx.state.doc.config.text);
  ctx.probes.recordLabel("compare_b_text", c.b.doc.config.text);
  std::string status = c.b.compute.computing ? "computing B on the worker…" : "";
  if (!c.b.doc.configError.empty()) status = "B cannot run: " + c.b.doc.configError;
  if (!c.b.actionError.empty()) status = c.b.actionError;
  if (!status.empty()) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", status.c_str());
  ctx.probes.recordLabel("compare_status", status);
}

// The head both sides show (A's view.head, as the Heatmap tab).
void headControl(UiContext& ctx, const Trace& ta, const Trace& tb) {
  const float em = ImGui::GetFontSize();
  if (ta.batch > 1 && tb.batch > 1) {
    ImGui::SetNextItemWidth(6 * em);
    dragSliderInt("batch item", &ctx.view.batch, 0, std::min(ta.batch, tb.batch) - 1);
    ctx.probes.recordLastItem("compare_batch");
    ImGui::SameLine(0, em);
  }
  if (!stageHasHeads(ctx.view.stage)) {
    ImGui::TextDisabled("%s has no head axis", stageInfo(ctx.view.stage).title);
    return;
  }
  const int heads = std::max(ta.heads, tb.heads);
  ImGui::SetNextItemWidth(8 * em);
  dragSliderInt("head", &ctx.view.head, 0, heads - 1);
  recordField(ctx, "compare_head", 8 * em);
  ctx.probes.recordLabel("compare_head", std::to_string(ctx.view.head));
}

// The cell (row, col) of a map drawn at fit (no zoom: the three maps stay cell for cell aligned).
void litCell(const HeatmapHover& map, int rows, int cols, int row, int col) {
  if (row < 0 || col < 0 || row >= rows || col >= cols || rows <= 0 || cols <= 0) return;
  const float w = (map.plotMax.x - map.plotMin.x) / static_cast<float>(cols);
  const float h = (map.plotMax.y - map.plotMin.y) / static_cast<float>(rows);
  const ImVec2 a(map.plotMin.x + w * static_cast<float>(col), map.plotMin.y + h * static_cast<float>(row));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(a.x + w + 1, a.y + h + 1), IM_COL32(0, 0, 0, 255), 0, 0, 4.0f);
  dl->AddRect(a, ImVec2(a.x + w, a.y + h), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
}

HeatmapSpec sideSpec(UiContext& ctx, const Slice2D& s, const Trace& t, ColorRange range, std::uint64_t serial) {
  HeatmapSpec spec;
  spec.slice = &s;
  spec.colormap = effectiveColormap(ctx.view, s.stage);
  spec.range = range;
  spec.kind = stageInfo(s.stage).kind;
  spec.scale = effectiveColorScale(ctx.view.colorScale, spec.kind);
  spec.trace = &t;
  spec.heads = t.heads;
  spec.dk = t.dk;
  spec.showNumbers = ctx.view.showNumbers;
  spec.colorbarTexture = ctx.textures.colorbar(spec.colormap).imguiId();
  spec.interactive = false;
  spec.tooltip = false;  // the words under the maps say both values and the difference
  spec.textures = &ctx.textures;
  spec.textureKey = TextureKey{serial, static_cast<int>(s.stage), s.batchIndex, s.head, spec.colormap, range.lo, range.hi};
  return spec;
}

// Writes the picture the command line writes (A | B | B − A) to the path field's file.
void exportRow(UiContext& ctx, CompareState& c, const CompareState::Shown& sh) {
  const float em = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(std::max(8 * em, ImGui::GetContentRegionAvail().x - 12 * em));
  textField("##compare_export_path", &c.exportPath);
  ctx.probes.recordLastItem("compare_export_path");
  ImGui::SameLine();
  if (ImGui::Button("Export A | B | B − A")) {
    if (c.exportPath.empty()) {
      c.exportMessage = "give a file name (.png, .svg or .pdf)";
    } else {
      ComparisonPicture pic;
      pic.a = sh.a;
      pic.b = sh.b;
      pic.titleA = "A · " + nameSlice(*sh.a).title;
      pic.titleB = "B · " + nameSlice(*sh.b).title;
      pic.subtitleA = configLine(ctx.state);
      pic.subtitleB = configLine(c.b);
      pic.colormap = effectiveColormap(ctx.view, sh.a->stage);
      pic.seeAs = ctx.view.seeAs;
      if (sh.difference) {
        pic.difference = &*sh.difference;
        pic.differenceTitle = "B − A · " + nameSlice(*sh.a).title;
        pic.differenceSubtitle = "this map: " + differenceWords(sh.difference->max, *sh.a) + "\none scale centred on 0: ±" +
                                 formatDifference(sh.difference->hi);
      } else {
        pic.noDifferenceReason = sh.blocker;
      }
      fileComparison(ctx.requests, c.exportMessage, c.exportPath, pic);
    }
  }
  ctx.probes.recordLastItem("compare_export");
  if (!c.exportMessage.empty()) ImGui::TextDisabled("%s", c.exportMessage.c_str());
  ctx.probes.recordLabel("compare_export_message", c.exportMessage);
}

}  // namespace

void drawComparePanel(UiContext& ctx) {
  if (!ctx.state.compare) return;  // made by the update step on the tab's first frame
  CompareState& c = *ctx.state.compare;
  sourceForm(ctx, c);
  if (!c.active()) {
    ImGui::Spacing();
    ImGui::TextWrapped("Compare the stage on screen (A) with the same stage of a second model (B): another seed, "
                       "RoPE instead of sinusoidal positions, causal or not, another h, another checkpoint (two "
                       "checkpoints of one run are two steps of its timeline). Both are drawn on one scale, with "
                       "their difference B − A on a scale centred on 0; hovering a cell lights it in every map.");
    ctx.probes.recordLabel("compare_words", "no side B");
    return;
  }
  ImGui::Separator();
  sidesLines(ctx, c);
  if (!traceReady(ctx) || !c.b.shown.hasTrace()) return;
  const Trace& ta = ctx.state.shown.trace;
  const Trace& tb = c.b.shown.trace;
  headControl(ctx, ta, tb);
  const StageId stage = ctx.view.stage;
  const int batch = std::clamp(ctx.view.batch, 0, std::min(ta.batch, tb.batch) - 1);
  // Each side shows the query head the view picked when it has it, else its last; on the K/V stages
  // of grouped-query attention the K/V head that query head reads, as the Heatmap tab does.
  auto headOn = [&](const Trace& t) {
    if (!stageHasHeads(stage) || !stageRecorded(t, stage)) return 0;
    const int query = std::clamp(ctx.view.head, 0, std::max(t.heads, 1) - 1);
    return std::clamp(kvHeadRead(t, stage, query), 0, static_cast<int>(t.shapeOf(stage)[1]) - 1);
  };
  const int headA = headOn(ta), headB = headOn(tb);
  ctx.probes.recordLabel("compare_heads_shown", "A head " + std::to_string(headA) + ", B head " + std::to_string(headB));
  const CompareState::Shown& sh = c.shown(ctx.state, stage, batch, headA, headB);

  // The sentence under test: the largest |B − A| of the stage over every head, or why none.
  const std::string words = sh.difference ? sh.stageWords : "no difference map: " + sh.blocker;
  ImGui::PushTextWrapPos(0.0f);
  if (sh.difference) {
    ImGui::TextUnformatted(("over every head: " + words).c_str());
  } else {
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", words.c_str());
  }
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel("compare_words", words);
  ctx.probes.recordLabel("compare_blocker", sh.blocker);
  if (!sh.a || !sh.b) {
    ImGui::TextDisabled("%s", sh.blocker.empty() ? "nothing to show for this stage" : "the stage is not on both sides");
    return;
  }
  exportRow(ctx, c, sh);

  // A and B on one scale; the difference on its own, centred on 0.
  const ColorRange range = unionRange(viewRange(ctx.state, ctx.view, stage, batch, sh.a->head),
                                      viewRange(c.b, ctx.view, stage, batch, sh.b->head));
  const float em = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = em;
  const float columns = sh.difference ? 3.0f : 2.0f;
  const float mapW = std::max((avail.x - (columns - 1.0f) * gap) / columns, 6 * em);
  const float titleH = ImGui::GetTextLineHeightWithSpacing();
  const float mapH = std::max(avail.y - titleH - 3.5f * ImGui::GetTextLineHeightWithSpacing(), 6 * em);
  const ImVec2 origin = ImGui::GetCursorScreenPos();

  HeatmapHover maps[3];
  int drawn = 0;
  float bottom = origin.y;
  auto column = [&](int i, const char* id, const std::string& title, const HeatmapSpec& spec, const char* probe) {
    ImGui::SetCursorScreenPos(ImVec2(origin.x + static_cast<float>(i) * (mapW + gap), origin.y));
    ImGui::BeginGroup();
    ImGui::TextUnformatted(title.c_str());
    maps[i] = drawHeatmap(id, spec, nullptr, ImVec2(mapW, mapH));
    ImGui::EndGroup();
    bottom = std::max(bottom, ImGui::GetItemRectMax().y);
    ctx.probes.recordRect(probe, maps[i].plotMin, maps[i].plotMax);
    drawn = i + 1;
  };
  // Each map's heading says its side, its layer of a model (nameSource) and head; the stage is the
  // Pipeline's, above the tabs.
  auto heading = [&ctx](const char* side, const Slice2D& s) {
    std::string title = side;
    if (const SelectionName source = nameSource(s.layer); !source.title.empty()) title += " · " + source.title;
    if (s.head >= 0) title += " · head " + std::to_string(s.head);
    ctx.probes.recordLabel(std::string("compare_heading_") + (side[0] == 'A' ? "a" : "b"), title);
    return title;
  };
  column(0, "compare_a", heading("A", *sh.a), sideSpec(ctx, *sh.a, ta, range, ctx.state.shown.traceSerial),
         "compare_map_a");
  column(1, "compare_b", heading("B", *sh.b),
         sideSpec(ctx, *sh.b, tb, range, kCompareBSpace | c.b.shown.traceSerial), "compare_map_b");
  if (sh.difference) {
    HeatmapSpec d;
    d.slice = &sh.differenceSlice;
    d.colormap = defaultColormap(DataKind::Signed);  // a difference: centred on 0
    d.range = ColorRange{sh.difference->lo, sh.difference->hi};
    d.kind = DataKind::Signed;
    d.scale = ColorScale::Linear;
    d.heads = ta.heads;
    d.dk = ta.dk;
    d.showNumbers = ctx.view.showNumbers;
    d.colorbarTexture = ctx.textures.colorbar(d.colormap).imguiId();
    d.interactive = false;
    d.tooltip = false;
    d.textures = &ctx.textures;
    // The texture shows this pair of traces: both serials in the key.
    d.textureKey = TextureKey{kCompareDifferenceSpace | (ctx.state.shown.traceSerial << 24) | c.b.shown.traceSerial,
                              static_cast<int>(stage), batch, sh.a->head, d.colormap, d.range.lo, d.range.hi};
    column(2, "compare_diff", "B − A (centred on 0, ±" + formatDifference(sh.difference->hi) + ")", d,
           "compare_map_diff");
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, bottom + 0.3f * em));

  // Linked hover: the cell under the mouse in any map, lit in every map and said in words.
  int row = -1, col = -1;
  for (int i = 0; i < drawn; ++i) {
    if (maps[i].hovered) {
      row = maps[i].row;
      col = maps[i].col;
    }
  }
  std::string hover;
  if (row >= 0) {
    litCell(maps[0], sh.a->rows, sh.a->cols, row, col);
    litCell(maps[1], sh.b->rows, sh.b->cols, row, col);
    if (drawn > 2) litCell(maps[2], sh.a->rows, sh.a->cols, row, col);
    hover = row < sh.a->rows && col < sh.a->cols ? hoverWords(*sh.a, sh.b, row, col, sh.difference.has_value()) : "A has no such cell";
  }
  if (sh.difference && sh.difference->oneSided > 0) {
    ImGui::TextDisabled("%d cells are blocked on one side only: not compared (drawn as blocked in B − A)",
                        sh.difference->oneSided);
  }
  ImGui::TextUnformatted(hover.empty() ? "hover a cell: it lights in every map, with both values and B − A" : hover.c_str());
  ctx.probes.recordLabel("compare_hover", hover);
}

}  // namespace mhascope::app
