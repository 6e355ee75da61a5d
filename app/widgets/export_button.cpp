#include "widgets/export_button.hpp"

#include "io/file_io.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <exception>
#include <filesystem>

#include "export/export.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {
namespace {

constexpr const char* kExtensions[] = {".png", ".svg", ".pdf"};
constexpr const char* kFormatLabels[] = {"PNG", "SVG", "PDF"};

// The same name the window's label and the picture's title use (core's nameSlice).
std::string defaultFileName(const ExportTarget& t, int format) {
  const int gridHeads = t.grid ? static_cast<int>(t.slices.size()) : 0;
  return nameSlice(*t.slices.front(), gridHeads).fileStem + kExtensions[format];
}

void saveNow(UiContext& ctx, const ExportTarget& target) {
  ExportUi& ui = ctx.view.exportUi;
  const std::string path = (std::filesystem::path(ui.folder) / ui.fileName).string();
  ExportOptions options;
  options.colormap = target.colormap;
  options.range = target.range;
  options.subtitle = configLine(ctx.state);
  Status st = exportRefusal(path);
  if (st) {
    try {
      if (target.grid) {
        std::vector<Slice2D> heads;
        heads.reserve(target.slices.size());
        for (const Slice2D* s : target.slices) heads.push_back(*s);
        st = exportHeadGrid(path, heads, options);
      } else {
        st = exportHeatmap(path, *target.slices.front(), options);
      }
    } catch (const std::exception& e) {  // bad_alloc, filesystem_error: shown, never fatal
      st = makeError("cannot export " + path + ": " + e.what());
    }
  }
  ui.messageIsError = !st.ok();
  ui.message = st.ok() ? "Saved " + path : st.error().message;
}

}  // namespace

Status exportRefusal(const std::string& path) { return refuseToReplace(path); }

void drawExportButton(UiContext& ctx, const char* probeName, const ExportTarget& target) {
  ImGui::PushID(probeName);
  ExportUi& ui = ctx.view.exportUi;
  const bool usable = !target.slices.empty() && target.slices.front() != nullptr;
  ImGui::BeginDisabled(!usable);
  if (ImGui::Button("Export…")) {
    ui.fileName = defaultFileName(target, ui.format);
    ui.message.clear();
    ImGui::OpenPopup("export");
  }
  ImGui::EndDisabled();
  ctx.probes.recordLastItem(probeName);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::SetTooltip(target.grid ? "Save every head of this stage as one picture (PNG, SVG or PDF)"
                                  : "Save this heatmap as a picture (PNG, SVG or PDF)");
  }
  if (usable && ImGui::BeginPopup("export")) {
    const float em = ImGui::GetFontSize();
    ImGui::TextUnformatted(target.grid ? "Export all heads" : "Export this heatmap");
    ImGui::Separator();
    ImGui::SetNextItemWidth(28 * em);
    ImGui::InputText("folder", &ui.folder);
    ImGui::SetNextItemWidth(28 * em);
    ImGui::InputText("file name", &ui.fileName);
    for (int f = 0; f < 3; ++f) {
      ImGui::PushID(f);
      if (f > 0) ImGui::SameLine();
      if (ImGui::RadioButton(kFormatLabels[f], ui.format == f)) {
        ui.format = f;
        ui.fileName = std::filesystem::path(ui.fileName).replace_extension(kExtensions[f]).string();
      }
      ctx.probes.recordLastItem(std::string(probeName) + "_" + (kExtensions[f] + 1));
      ImGui::PopID();
    }
    ImGui::TextDisabled("Same picture as: mhascope export (colour scale, labels, title)");
    if (ImGui::Button("Save", ImVec2(8 * em, 0))) saveNow(ctx, target);
    ctx.probes.recordLastItem(std::string(probeName) + "_save");
    ImGui::SameLine();
    if (ImGui::Button("Close")) ImGui::CloseCurrentPopup();
    drawResultMessage(ui.message, ui.messageIsError, 36 * em);
    ImGui::EndPopup();
  }
  ImGui::PopID();
}

}  // namespace mhascope::app
