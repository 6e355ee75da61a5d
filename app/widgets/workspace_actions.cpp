// Save workspace / Save workspace as… (see workspace_actions.hpp).
#include "widgets/workspace_actions.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <filesystem>

#include "state/workspace_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/flow.hpp"
#include "widgets/text_field.hpp"

namespace mhascope::app {
namespace {

// Files the save (state/requests.hpp): the update step writes the workspace, then says so.
void saveTo(UiContext& ctx, const std::string& path) {
  ctx.requests.file([&state = ctx.state, &view = ctx.view, &lessons = ctx.lessons, path] {
    saveWorkspaceAndSay(state, view, lessons, path);
  });
}

}  // namespace

void drawWorkspaceActions(UiContext& ctx) {
  WorkspaceUi& ui = ctx.view.workspaceUi;
  ctx.probes.recordLabel("workspace_message", ui.message);  // tests
  ImGui::PushID("workspace");
  bool openPopup = false;
  if (ImGui::Button("Save workspace")) {
    if (ui.path.empty()) {
      openPopup = true;
    } else {
      saveTo(ctx, ui.path);
    }
  }
  ctx.probes.recordLastItem("workspace_save");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("Keep this picture: configuration, files (with their SHA-256), stage, head, zoom, colours and "
                      "the lessons' choices, as a .json that `mhascope --workspace FILE` opens again");
  }
  sameLineOrWrap(ImGui::CalcTextSize("Save as…").x + 2.0f * ImGui::GetStyle().FramePadding.x);  // never cut
  if (ImGui::Button("Save as…")) openPopup = true;
  ctx.probes.recordLastItem("workspace_save_as");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Save the workspace under another name");
  if (openPopup) {
    ui.pathField = !ui.path.empty() ? ui.path : (std::filesystem::path(ctx.view.exportUi.folder) / "workspace.json").string();
    ui.message.clear();
    ImGui::OpenPopup("save workspace");
  }
  if (!ui.path.empty()) ImGui::TextDisabled("workspace: %s", ui.path.c_str());
  if (!ImGui::IsPopupOpen("save workspace")) drawResultMessage(ui.message, ui.messageIsError);
  if (ImGui::BeginPopup("save workspace")) {
    const float em = ImGui::GetFontSize();
    ImGui::TextUnformatted("Save workspace as");
    ImGui::Separator();
    ImGui::SetNextItemWidth(36 * em);
    textField("path", &ui.pathField);
    ctx.probes.recordLastItem("workspace_path");
    ImGui::TextDisabled("A .json; input files are named by path and SHA-256, never overwritten");
    if (ImGui::Button("Save", ImVec2(8 * em, 0))) saveTo(ctx, ui.pathField);
    ctx.probes.recordLastItem("workspace_popup_save");
    ImGui::SameLine();
    if (ImGui::Button("Close")) {
      ImGui::CloseCurrentPopup();
      ui.message.clear();  // said in the popup; the controls stay as they were
    }
    ctx.probes.recordLastItem("workspace_close");
    drawResultMessage(ui.message, ui.messageIsError, 36 * em);
    ImGui::EndPopup();
  }
  ImGui::PopID();
}

}  // namespace mhascope::app
