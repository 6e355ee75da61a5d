// The parts of the controls panel (controls_panel.cpp) that more than one of its files draws: the
// help marker, the section title, and the greying of controls a file (or a trained layer) fixes,
// with the reason under them; and the Attention section (controls_attention.cpp): mask, key padding,
// scaling, the score stabilisers, positions, the sliding window.
#pragma once

#include <string>

#include "panels/panel.hpp"

namespace mhascope::app {

// "(?)" after the last item, the text in a tooltip.
void helpMarker(const char* text);
// A greyed title and a separator above a section of controls.
void sectionTitle(const char* text);

// A trained layer fixes every model control at once: said once, above them (kTrainedLayerNote),
// not under each; its sections are greyed with this reason and no line of their own.
inline constexpr const char* kFixedByTrainedLayer = "the trained layer";
inline constexpr const char* kTrainedLayerNote =
    "The controls below are set by the trained layer from the Train mode; close it under Files in use to edit them.";

// Why a control cannot change while files (or a trained layer) are in use; "" when it can.
std::string fixedReason(const AppState& st, const char* control);

// Controls fixed by a file: greyed, with the reason under them (once per reason).
class FixedSection {
 public:
  explicit FixedSection(std::string why);
  ~FixedSection();
  FixedSection(const FixedSection&) = delete;
  FixedSection& operator=(const FixedSection&) = delete;
  std::string reason;
};

// The Attention section; true when the configuration changed.
bool drawAttentionControls(UiContext& ctx);

}  // namespace mhascope::app
