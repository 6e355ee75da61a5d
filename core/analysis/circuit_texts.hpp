// The explanations in words beside each circuits view, for the window and the command line alike,
// built from the numbers they explain (tests compare the two). "layer 0 head 1"-style names;
// scores with three decimals.
#pragma once

#include <string>

#include "analysis/circuits.hpp"

namespace mhascope::analysis {

std::string headName(int layer, int head);
// What a kind of composition means, one sentence ("K-composition: the later head's keys read ...").
const char* compositionMeaning(char kind);

// Every head and pair (Circuits):
// the composition view of one kind: its strongest pair, its score against the baseline, what the
// kind means; a one-layer model says there are no pairs.
std::string compositionText(const Circuits& c, char kind);
// The copying scores: the highest and the lowest head, and what the score means.
std::string copyingText(const Circuits& c);
// One head's matrices: its copying score, ||QK||_F and ||OV||_F, and how to read the token-space
// pictures.
std::string headCircuitText(const Circuits& c, int layer, int head);

// Under the composition maps: their one colour scale, 0 … top, and where the baseline sits on it.
std::string compositionScaleText(double baseline, double top);

// Virtual heads (either computation):
// "layer 0 head 0 → layer 1 head 1 through the values: V 0.412, copying +1.000 (each alone: -0.900, -0.990)";
// aloneA, aloneB: the two heads' own copying scores.
std::string virtualHeadLine(const Composition& p, double aloneA, double aloneB);
// What a virtual head is and what its score says, one paragraph (after the lines).
const char* virtualHeadMeaning();
// The pairs V-composition ranks first (topValuePairs, kTopVirtualPairs), one line each, then the meaning;
// a one-layer model says there are no pairs.
std::string virtualHeadsText(const Circuits& c);
// One pair of the checkpoint's table: its line and, with the token-space matrices, its diagonal check.
std::string virtualPairText(const Circuits& c, const Composition& p);

// Around one head (OneHeadCircuits):
// the pairs through the chosen head (reads and readBy) that V-composition ranks first, as virtualHeadsText.
std::string oneHeadVirtualHeadsText(const OneHeadCircuits& c);
// The picked pair (c.picked): its line and its E_s OV^a OV^b U_s diagonal over the text's tokens; "" without one.
std::string pickedVirtualText(const OneHeadCircuits& c);
// the strongest read and reader of one kind against the baseline.
std::string oneHeadCompositionText(const OneHeadCircuits& c, char kind);
// The highest and the lowest head over the whole vocabulary, and the chosen head's.
std::string oneHeadCopyingText(const OneHeadCircuits& c);
// The conventions in one line: gains folded, biases left out, and with RoPE the content part only.
std::string oneHeadConventions(bool rope);
// The chosen head's matrix `matrix` (0 QK, 1 OV, 2 E QK Eᵀ, 3 E OV U, 4 P QK Pᵀ): its norm, copying score or
// position words and
// how to read the picture; `distinctTokens`: of the whole text (the axes hold at most maxTokens).
std::string oneHeadMatrixText(const OneHeadCircuits& c, int distinctTokens, int matrix);
// A composition cell: "layer 0 head 2 → layer 1 head 3: K 0.123 (random baseline 0.036)".
std::string compositionCellText(const OneHeadCircuits& c, const Composition& p, char kind);
// A copying cell: "layer 1 head 3: copying score 0.412".
std::string copyingCellText(const OneHeadCircuits& c, int layer, int head);

}  // namespace mhascope::analysis
