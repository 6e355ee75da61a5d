// File › Open: the "Open file…" button at the top of the controls, its popup (a path field, the
// folder's openable files and model folders, the recent files, then a .npy's role or a
// checkpoint's layer), and the
// controls' "Files in use" list with a way to close each. Opening is state/open_file.cpp; the
// files are read by the compute scheduler, the folder listed by the update step.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "panels/panel.hpp"
#include "state/open_file.hpp"
#include "widgets/colors.hpp"
#include "widgets/text_field.hpp"

namespace mhascope::app {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPopupId = "Open a file";

// The listing the update step made (refreshOpenFileListing); a click only edits ui.folder, listed
// again before the next frame is drawn.
void folderList(UiContext& ctx, OpenUi& ui) {
  const std::string& folder = ui.listedFolder;
  ImGui::TextDisabled("In %s", folder.c_str());
  if (ImGui::SmallButton("up one folder")) ui.folder = fs::path(folder).parent_path().string();
  ctx.probes.recordLastItem("open_up");
  const std::vector<OpenEntry>& entries = ui.entries;
  const std::string& why = ui.listError;
  const float em = ImGui::GetFontSize();
  ImGui::BeginChild("##files", ImVec2(36.0f * em, 12.0f * em), true);
  if (!why.empty()) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "%s", why.c_str());
  if (entries.empty() && why.empty()) ImGui::TextDisabled("no .safetensors, .npy or .json files or model folders here");
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(entries.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const OpenEntry& e = entries[static_cast<std::size_t>(i)];
      ImGui::PushID(i);
      const std::string label = e.model ? e.name + "/   a model (config.json)" : e.folder ? e.name + "/" : e.name;
      if (ImGui::Selectable(label.c_str())) {
        const std::string full = (fs::path(folder) / e.name).string();
        if (e.folder && !e.model) ui.folder = full;
        else if (beginOpen(ctx.state, ctx.view, ctx.lessons, full) && e.model) ImGui::CloseCurrentPopup();
      }
      ctx.probes.recordLastItem("open_entry_" + e.name);
      if (e.model && ImGui::IsItemHovered()) ImGui::SetTooltip("open this model folder (type its path to look inside)");
      ImGui::PopID();
    }
  }
  ImGui::EndChild();
}

bool missing(const OpenUi& ui, const std::string& path) {
  return std::find(ui.recentMissing.begin(), ui.recentMissing.end(), path) != ui.recentMissing.end();
}

void recentList(UiContext& ctx, OpenUi& ui) {
  ImGui::TextUnformatted("Recent files");
  if (ui.recent.empty()) ImGui::TextDisabled("none yet");
  for (std::size_t i = 0; i < ui.recent.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    const bool there = !missing(ui, ui.recent[i]);  // as the last listing saw it
    ImGui::BeginDisabled(!there);  // a moved or deleted file stays listed, greyed, until pruned
    if (ImGui::Selectable(ui.recent[i].c_str())) beginOpen(ctx.state, ctx.view, ctx.lessons, ui.recent[i]);
    ctx.probes.recordLastItem("recent_" + std::to_string(i));
    ImGui::EndDisabled();
    if (!there && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("missing: moved or deleted");
    ImGui::PopID();
  }
  if (!ui.recent.empty() && ImGui::SmallButton("forget missing files")) {
    ui.recent.erase(std::remove_if(ui.recent.begin(), ui.recent.end(),
                                   [&](const std::string& p) { return missing(ui, p); }),
                    ui.recent.end());
    ui.recentMissing.clear();
    if (!ui.recent.empty()) rememberRecent(ui, std::string(ui.recent.front()));
  }
}

// A .npy's role or a checkpoint's layer, then Open.
void pendingChoice(UiContext& ctx, OpenUi& ui) {
  ImGui::Text("%s: %s", ui.pendingPath.c_str(), ui.pendingInfo.summary.c_str());
  if (ui.pendingInfo.kind == FileKind::Checkpoint) {
    ImGui::TextUnformatted("Which layer?");
    for (int l = 0; l < std::max(ui.pendingInfo.layers, 1); ++l) {
      ImGui::PushID(l);
      ImGui::SameLine();
      if (ImGui::RadioButton(("layer " + std::to_string(l)).c_str(), ui.layer == l)) ui.layer = l;
      ctx.probes.recordLastItem("open_layer_" + std::to_string(l));
      ImGui::PopID();
    }
  } else {
    ImGui::TextUnformatted("Use it as:");
    for (int r = 0; r < kArrayRoleCount; ++r) {
      ImGui::PushID(r);
      const auto role = static_cast<ArrayRole>(r);
      if (ImGui::RadioButton(arrayRoleName(role), ui.role == r)) ui.role = r;
      std::string probe = std::string("open_role_") + arrayRoleName(role);
      std::replace(probe.begin(), probe.end(), ' ', '_');
      ctx.probes.recordLastItem(probe);
      ImGui::SameLine();
      ImGui::TextDisabled("%s", arrayRoleShape(role));
      ImGui::PopID();
    }
  }
  if (ImGui::Button("Open")) {
    if (finishOpen(ctx.state, ctx.view)) ImGui::CloseCurrentPopup();
  }
  ctx.probes.recordLastItem("open_confirm");
  ImGui::SameLine();
  if (ImGui::Button("Back")) ui.pendingPath.clear();
}

void openPopup(UiContext& ctx) {
  OpenUi& ui = ctx.view.openUi;
  ui.popupShown = ImGui::BeginPopup(kPopupId);
  if (!ui.popupShown) return;
  ctx.probes.recordLabel("open_popup", "open");
  if (!ui.pendingPath.empty()) {
    pendingChoice(ctx, ui);
  } else {
    ImGui::TextUnformatted("Path (Enter opens):");
    ImGui::SetNextItemWidth(36.0f * ImGui::GetFontSize());
    if (textField("##path", &ui.path, ImGuiInputTextFlags_EnterReturnsTrue)) {
      if (beginOpen(ctx.state, ctx.view, ctx.lessons, ui.path) && ui.pendingPath.empty()) ImGui::CloseCurrentPopup();
    }
    ctx.probes.recordLastItem("open_path");
    ImGui::TextDisabled(".safetensors (MHA weights or a checkpoint), .npy (inputs, masks), .json (presets, workspaces), "
                        "a model folder (with its config.json)");
    folderList(ctx, ui);
    recentList(ctx, ui);
  }
  if (!ui.message.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColor);
    ImGui::PushTextWrapPos(36.0f * ImGui::GetFontSize());
    ImGui::TextUnformatted(ui.message.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
    ImGui::TextDisabled("The picture is unchanged.");
  }
  if (ImGui::Button("Close")) ImGui::CloseCurrentPopup();
  ctx.probes.recordLastItem("open_close");
  ImGui::EndPopup();
}

}  // namespace

void drawOpenFileButton(UiContext& ctx) {
  OpenUi& ui = ctx.view.openUi;
  // Opened a frame after it is asked for, so the update step between has listed the folder.
  if (ui.requestOpen) {
    ui.requestOpen = false;
    ImGui::OpenPopup(kPopupId);
  }
  if (ImGui::Button("Open file…")) {
    ui.message.clear();
    ui.pendingPath.clear();
    ui.path.clear();  // a fresh field: what is typed is the whole path
    ui.requestOpen = true;
  }
  ctx.probes.recordLastItem("open_file");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("MHA weights or a training checkpoint (.safetensors), inputs or masks (.npy), a preset or a "
                      "workspace (.json), a Hugging Face model folder (or its config.json). Dropping a file on the "
                      "window does the same.");
  }
  ctx.probes.recordLabel("open_popup", "none");
  openPopup(ctx);
}

void drawFilesInUse(UiContext& ctx) {
  AppState& st = ctx.state;
  ctx.probes.recordLabel("subtitle", configLine(st));  // what an export's subtitle says (tests)
  ctx.probes.recordLabel("action_error", st.actionError);
  ctx.probes.recordLabel("open_message", ctx.view.openUi.message);
  std::string inUse;
  for (const auto& [flag, path] : st.doc.files.named()) inUse += (inUse.empty() ? "" : "; ") + flag.substr(2) + " " + path;
  if (st.doc.trainedLayer) inUse = "trained layer" + (inUse.empty() ? "" : "; " + inUse);
  ctx.probes.recordLabel("files_in_use", inUse.empty() ? "none" : inUse);
  if (!st.doc.fromFiles()) return;
  ImGui::TextUnformatted("Files in use");
  std::vector<std::pair<std::string, std::string>> rows = st.doc.files.named();
  if (st.doc.trainedLayer) rows.insert(rows.begin(), {"trained", "trained layer from the Train mode"});
  for (const auto& [flag, path] : rows) {
    ImGui::PushID(flag.c_str());
    if (ImGui::SmallButton("x")) closeFile(st, flag);
    ctx.probes.recordLastItem("close_file" + flag);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("close this file");
    ImGui::SameLine();
    std::string line = flag == "trained" ? path : flag.substr(2) + ": " + path;
    if ((flag == "--checkpoint" || flag == "--model") && st.doc.files.layer) {
      line += " (layer " + std::to_string(*st.doc.files.layer) + ")";
    }
    ImGui::TextWrapped("%s", line.c_str());
    ImGui::PopID();
  }
  if (ImGui::SmallButton("back to text + seed")) closeAllFiles(st);
  ctx.probes.recordLastItem("close_all_files");
}

}  // namespace mhascope::app
