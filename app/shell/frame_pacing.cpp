// Idle waiting, settle frames, the picture hash, held key taps and click-through popups (see
// frame_pacing.hpp).
#include "shell/frame_pacing.hpp"

#include <imgui.h>
#include <imgui_internal.h>  // the popup stack and window tree, for clickThroughPopups

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mhascope::app {

FramePacer::Wake FramePacer::schedule(bool animating) {
  constexpr int kSettleFrames = 2;  // after a wake-up: hover highlights and popups settle
  if (settleFrames_ > 0) {
    --settleFrames_;
    return Wake::Now;
  }
  // Every wake-up, by an event or by Play's/the worker's tick, is followed by settle frames:
  // the frame that handles a click draws the old state of what the click changed.
  settleFrames_ = kSettleFrames;
  return animating ? Wake::Tick : Wake::Event;
}

double yieldingTickSeconds(double workSeconds) { return std::clamp(4.0 * workSeconds, 1.0 / 30.0, 0.5); }

bool FramePacer::pictureChanged() {
  // A 64-bit hash of everything ImGui will draw: vertices, indices, textures, clip rects.
  std::uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x100000001B3ull;
      h ^= h >> 29;
    }
    for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  };
  if (const ImDrawData* dd = ImGui::GetDrawData()) {
    for (int n = 0; n < dd->CmdListsCount; ++n) {
      const ImDrawList* list = dd->CmdLists[n];
      mix(list->VtxBuffer.Data, static_cast<std::size_t>(list->VtxBuffer.Size) * sizeof(ImDrawVert));
      mix(list->IdxBuffer.Data, static_cast<std::size_t>(list->IdxBuffer.Size) * sizeof(ImDrawIdx));
      for (const ImDrawCmd& cmd : list->CmdBuffer) {
        mix(&cmd.ClipRect, sizeof cmd.ClipRect);
        mix(&cmd.TextureId, sizeof cmd.TextureId);
        mix(&cmd.ElemCount, sizeof cmd.ElemCount);
      }
    }
  }
  const bool changed = h != lastPictureHash_;
  lastPictureHash_ = h;
  return changed;
}

void FramePacer::afterRender(bool realFrame) {
  // Keep drawing while the picture still changes (a tab selected on the click's frame shows on
  // the next one; a button's label changes after it was drawn), a bounded number of frames.
  if (pictureChanged() && realFrame && ++changingFrames_ < 60) {
    settleFrames_ = std::max(settleFrames_, 1);
  } else if (!realFrame || settleFrames_ == 0) {
    changingFrames_ = 0;
  }
}

void KeyTaps::apply(Window& window) {
  // A key pressed and released within that one poll: ImGui 1.86 would never see it down. Hold it
  // for this frame (ImGui then sees the press), let go on the next.
  ImGuiIO& io = ImGui::GetIO();
  for (int key : held_) {
    if (key < IM_ARRAYSIZE(io.KeysDown) && !window.keyIsDown(key)) io.KeysDown[key] = false;
  }
  held_.clear();
  for (int key : window.takePressedKeys()) {
    if (key < IM_ARRAYSIZE(io.KeysDown) && !io.KeysDown[key]) {
      io.KeysDown[key] = true;
      held_.push_back(key);
    }
  }
}

void clickThroughPopups() {
  // ImGui lets a press outside an open (non-modal) popup only close the popup: the tab, button
  // or stage under the mouse needs a second click. Here such a press closes the popups first,
  // so the same press reaches what is under it.
  ImGuiContext& g = *ImGui::GetCurrentContext();
  const ImGuiIO& io = g.IO;
  const bool pressStarts = io.MouseDown[0] && io.MouseDownDuration[0] < 0.0f;  // not held last frame
  if (!pressStarts || g.OpenPopupStack.Size == 0 || ImGui::GetTopMostPopupModal() != nullptr) return;
  for (const ImGuiPopupData& popup : g.OpenPopupStack) {
    if (popup.Window && popup.Window->WasActive && popup.Window->Rect().Contains(io.MousePos)) return;
  }
  // The deepest window under the mouse. A press in the window that opened the popup keeps
  // ImGui's behaviour (the press only closes it): clicking a combo's or the Export button again
  // must close its popup, not close and reopen it.
  ImGuiWindow* under = nullptr;
  int underDepth = -1;
  for (ImGuiWindow* w : g.Windows) {
    if (!w->WasActive || w->Hidden || (w->Flags & (ImGuiWindowFlags_Tooltip | ImGuiWindowFlags_Popup)) ||
        !w->OuterRectClipped.Contains(io.MousePos)) {
      continue;
    }
    int depth = 0;
    for (ImGuiWindow* p = w->ParentWindow; p; p = p->ParentWindow) ++depth;
    if (depth > underDepth) {
      under = w;
      underDepth = depth;
    }
  }
  if (!under || under == g.OpenPopupStack[0].SourceWindow) return;
  ImGui::ClosePopupToLevel(0, true);
}

}  // namespace mhascope::app
