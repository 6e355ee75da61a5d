// What the Circuits views share (defined in circuits_widgets.cpp): a section's title, a head's short
// tag, one picture as a heatmap, the export popup of a picture and the rollout section — so the view
// of every pair (a checkpoint, the Train mode) and the view around one head (a model folder,
// model_circuits_panel.cpp) look and export alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/circuits.hpp"
#include "analysis/rollout.hpp"
#include "attention/trace.hpp"
#include "color/color_scale.hpp"
#include "color/colormap.hpp"
#include "render/texture_cache.hpp"
#include "state/ui_context.hpp"
#include "widgets/heatmap_view.hpp"

namespace mhascope::app {

void circuitsSectionTitle(const char* title);
std::string circuitsHeadTag(int layer, int head);  // "L1 H3"

// A signed or [0, 1] picture with labels on both axes (index labels where the slice has none),
// numbers in its cells when they are big enough, its colour bar; `side` is the plot's height.
HeatmapHover drawCircuitsMap(UiContext& ctx, const char* id, Slice2D& slice, DataKind kind, ColormapId colormap,
                             ColorRange range, TextureKey key, float side, bool tooltip = true);
// The same in a `size` of the caller's (labels and colour bar included): a map of a few rows.
HeatmapHover drawCircuitsMap(UiContext& ctx, const char* id, Slice2D& slice, DataKind kind, ColormapId colormap,
                             ColorRange range, TextureKey key, ImVec2 size, bool tooltip);

// The `side` (drawCircuitsMap's) a square map of tokens or positions needs for a label on every row
// and column (cells at least one line of text tall, beside its labels and the corner's axis names),
// at least `side`, at most the window's width left of the colour bar: a map of the text's 21 tokens
// drawn where 11 labels fit drops every other one.
float tokenMapSide(const Slice2D& slice, float side);

// A white mark across the colour bar drawCircuitsMap drew beside `drawn`, at `value` of `range`
// (the random baseline on a composition map); nothing when the value is outside the range.
void markColorbar(const HeatmapHover& drawn, ColorRange range, float value);

// "pick a pair: earlier head [L0 h1] → later head [L1 h0]": two combos over the heads of a model of
// `layers` x `heads` (the later one's list starts a layer after the earlier head); `pair` is set when the
// user chooses an item and reset when it does not fit the model. Probes circuits_pair_from,
// circuits_pair_to (also labels: the heads shown) and their items circuits_pair_from_L{l}h{i},
// circuits_pair_to_L{l}h{i}.
void drawPairPicker(UiContext& ctx, int layers, int heads, std::optional<analysis::HeadPair>& pair);

// A head's five pictures: names, probe / file-name stems and axes, in the order the pickers show them.
inline constexpr int kCircuitsPositionMatrix = 4;  // P QK Pᵀ, for a model with learned positions
inline constexpr const char* kCircuitsMatrixNames[] = {"QK", "OV", "E QK Eᵀ", "E OV U", "P QK Pᵀ"};
inline constexpr const char* kCircuitsMatrixStems[] = {"qk", "ov", "qk_tokens", "ov_tokens", "qk_positions"};
inline constexpr const char* kCircuitsRowAxes[] = {"d_model (query)", "d_model (attended)", "query token", "attended token",
                                                   "query position"};
inline constexpr const char* kCircuitsColAxes[] = {"d_model (key)", "d_model (written)", "key token", "predicted token",
                                                   "key position"};

// The five radio buttons choosing `matrix` (the token-space two greyed without `tokenSpace`, the
// position map without `positionSpace`: no learned position table); probes circuits_m_qk …
// circuits_m_qk_positions. A choice that is greyed falls back to OV (or QK) first.
void drawCircuitsMatrixPicker(UiContext& ctx, int& matrix, bool tokenSpace, bool positionSpace);
// "composition Q K V": the radio buttons choosing `kind` (0, 1, 2); probes circuits_kind_q/k/v.
// Returns the chosen kind as 'Q', 'K' or 'V'.
char drawCircuitsKindPicker(UiContext& ctx, int& kind);

// "Export…" and its popup (PNG, SVG, PDF through core/export, the same picture as the command
// line's); probes `probe`, `probe`_save and `probe`_close.
void drawCircuitsExport(UiContext& ctx, const char* probe, const Slice2D& slice, ColormapId colormap, ColorRange range,
                        const std::string& title, const std::string& subtitle, const std::string& stem);

// The rollout section of either view: the last layer's raw weights beside the rollout (core's
// analysis::Rollout), its export, the words for the last position or the hovered row; `missing` is
// said (after "Rollout: ") when there is none.
struct RolloutPicture {
  const analysis::Rollout* rollout = nullptr;
  std::vector<std::string> labels;  // the sequence's tokens (T)
  std::string missing;
  std::string exportSubtitle, exportStem;
  TextureKey rawKey, rollKey;
};
void drawRolloutSection(UiContext& ctx, const RolloutPicture& p, float side);

}  // namespace mhascope::app
