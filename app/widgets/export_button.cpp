#include "widgets/export_button.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "state/workspace_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/text_field.hpp"

namespace mhascope::app {
namespace {

constexpr const char* kExtensions[] = {".png", ".svg", ".pdf", ".html"};
constexpr const char* kFormatLabels[] = {"PNG", "SVG", "PDF", "HTML"};
constexpr int kFormats = 4;

}  // namespace

void drawExportForm(UiContext& ctx, const ExportForm& form, const std::function<ExportPicture()>& picture) {
  const std::string probe = form.probe;
  ExportUi& ui = ctx.view.exportUi;
  ImGui::PushID(form.probe);
  if (ImGui::Button(form.button)) {
    ui.fileName = form.stem + (form.pageOnly ? ".html" : kExtensions[std::clamp(ui.format, 0, kFormats - 1)]);
    ui.message.clear();
    ImGui::OpenPopup("export");
  }
  ctx.probes.recordLastItem(probe);
  if (!form.tooltip.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::SetTooltip("%s", form.tooltip.c_str());
  }
  ctx.probes.recordLabel(probe + "_message", ui.message);
  if (ImGui::BeginPopup("export")) {
    const float em = ImGui::GetFontSize();
    ImGui::TextUnformatted(form.title.c_str());
    ImGui::Separator();
    ImGui::SetNextItemWidth(28 * em);
    textField("folder", &ui.folder);
    ImGui::SetNextItemWidth(28 * em);
    textField("file name", &ui.fileName);
    ctx.probes.recordLastItem(probe + "_name");
    for (int f = form.pageOnly ? kFormats - 1 : 0; f < kFormats; ++f) {
      ImGui::PushID(f);
      if (f > 0 && !form.pageOnly) ImGui::SameLine();
      if (ImGui::RadioButton(kFormatLabels[f], form.pageOnly || ui.format == f)) {
        if (!form.pageOnly) ui.format = f;
        ui.fileName = std::filesystem::path(ui.fileName).replace_extension(kExtensions[f]).string();
      }
      ctx.probes.recordLastItem(probe + "_" + (kExtensions[f] + 1));
      ImGui::PopID();
    }
    if (!form.note.empty()) ImGui::TextDisabled("%s", form.note.c_str());
    if (ctx.view.seeAs != SeeAs::Normal) ImGui::TextDisabled("Colours as seen with: %s", seeAsLabel(ctx.view.seeAs));
    if (ImGui::Button("Save", ImVec2(8 * em, 0))) {
      ExportPicture p = picture();
      p.options.seeAs = ctx.view.seeAs;  // the picture as the window shows it
      fileExport(ctx.requests, ui, (std::filesystem::path(ui.folder) / ui.fileName).string(), std::move(p));
    }
    ctx.probes.recordLastItem(probe + "_save");
    ImGui::SameLine();
    if (ImGui::Button("Close")) ImGui::CloseCurrentPopup();
    ctx.probes.recordLastItem(probe + "_close");
    drawResultMessage(ui.message, ui.messageIsError, 36 * em);
    ImGui::EndPopup();
  }
  ImGui::PopID();
}

void drawExportButton(UiContext& ctx, const char* probeName, const ExportTarget& target) {
  const bool usable = !target.slices.empty() && target.slices.front() != nullptr;
  ExportForm form;
  form.probe = probeName;
  form.title = target.grid ? "Export all heads" : "Export this heatmap";
  form.tooltip = target.grid ? "Save every head of this stage as one picture (PNG, SVG or PDF) or an offline page (HTML)"
                             : "Save this heatmap as a picture (PNG, SVG or PDF) or an offline page (HTML)";
  form.note = "Same picture as: mhascope export (colour scale, labels, title).\n"
              "HTML: one file, no network; hover values, the head view on weights, and this workspace\n"
              "(mhascope --workspace FILE.html opens the same view).";
  if (usable) {
    // The same name the window's label and the picture's title use (core's nameSlice).
    form.stem = nameSlice(*target.slices.front(), target.grid ? static_cast<int>(target.slices.size()) : 0).fileStem;
  }
  ImGui::BeginDisabled(!usable);
  drawExportForm(ctx, form, [&] {
    ExportPicture p;
    p.grid = target.grid;
    for (const Slice2D* s : target.slices) p.slices.push_back(*s);
    p.options.colormap = target.colormap;
    p.options.range = target.range;
    p.options.subtitle = configLine(ctx.state);
    p.workspace = workspaceFromWindow(ctx.state, ctx.view, ctx.lessons);
    return p;
  });
  ImGui::EndDisabled();
}

}  // namespace mhascope::app
