// The Model tab's heads, drawn by model_panel.cpp: the grid — L rows of h thumbnails of each head's
// attention, framed in the colour of the chosen role as strongly as the head plays it (hover: the
// head's offset profile; click: that layer and head) — and the side column beside it: the hovered or
// chosen head's larger view, its role scores beside chance, its offset profile, and the heads ranked
// by the role with the rule's verdicts.
#pragma once

#include <imgui.h>

#include "panels/panel.hpp"
#include "state/model_view_state.hpp"

namespace mhascope::app {

// The role's colour: the frames, the ranked list and the "Colour by" choices.
ImU32 roleColor(HeadRole r, float alpha = 1.0f);

struct GridPick {
  int layer = -1, head = -1;  // hovered (-1: none)
  bool clicked = false;
};

// L rows × h columns of thumbnails, one texture cut per cell; a frame in the role's colour, as
// strong as the head plays it, with the score written in the corner when the cell has room.
GridPick drawModelGrid(UiContext& ctx, ModelViewState& m, ImVec2 size);
// The side column, `width` wide, for the hovered head (else the chosen one).
void drawModelSide(UiContext& ctx, ModelViewState& m, const GridPick& pick, float width);

}  // namespace mhascope::app
