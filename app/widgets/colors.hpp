// The colours that carry meaning across the whole window: one per head (frames in the grid,
// the head buttons, the column blocks of d_model, the shape drawing), and one per symbol
// (T, d_model, h, d_k, B) used wherever that symbol is written.
#pragma once

#include <imgui.h>

#include <string>
#include <string_view>

namespace mhascope::app {

// Head `head` (0-based) of `heads`: well separated hues, the same everywhere in the app.
ImU32 headColor(int head, float alpha = 1.0f);
// "T_q", "T_k", "T", "d_model", "h", "d_k", "B" → its colour; anything else → the text colour.
ImU32 symbolColor(std::string_view symbol);
ImVec4 symbolColorVec(std::string_view symbol);

inline constexpr ImU32 kErrorColor = IM_COL32(255, 110, 100, 255);
inline constexpr ImU32 kOkColor = IM_COL32(120, 220, 120, 255);
inline constexpr ImU32 kWarningColor = IM_COL32(240, 190, 90, 255);  // a typed value the app moved into range
inline constexpr ImU32 kMaskFlagColor = IM_COL32(255, 80, 60, 255);  // fully masked rows: maskedRowColor()

// "Saved /path" in green or the error in red, wrapped at `wrapWidth` pixels from here
// (0: the window's edge). Nothing for an empty message.
void drawResultMessage(const std::string& message, bool isError, float wrapWidth = 0.0f);

// Black or white, whichever reads better on `background`.
ImU32 textColorOn(ImU32 background);

}  // namespace mhascope::app
