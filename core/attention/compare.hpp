// Two traces side by side: side A (what the window shows) and side B (another seed, another step of
// a run, RoPE instead of sinusoidal positions, causal or not, another h, another checkpoint). One
// stage of both is subtracted cell by cell, B − A, when the two tables have the same shape; the
// difference gets one scale symmetric about 0, so a cell's colour says at once which side is larger
// and by how much. When the shapes differ (another T, another h) there is no cell to pair with:
// differenceBlocker says exactly why, in the words the window and `mhascope compare` print.
//
// Pure: plain traces and slices in, numbers and words out; the window and the command line call the
// same functions, so the number on screen is the number printed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "util/result.hpp"

namespace mhascope {

// Why stage `stage` of A and of B cannot be subtracted cell by cell, or "" when it can: a stage
// only one of them records ("B records no 'q_rotated' stage: its configuration does not use it"),
// a different T ("different T: A has T = 6 tokens, B has T = 7 …"), a different h on a stage
// with a head axis ("different h: A has h = 4 heads, B has h = 8 …"), else the axes that differ.
std::string differenceBlocker(const Trace& a, const Trace& b, StageId stage);

// The cell with the largest |B − A|.
struct CellDifference {
  bool found = false;  // false: no cell both sides hold a finite number for
  float absDiff = 0.0f;  // |B − A| there
  float a = 0.0f, b = 0.0f;
  int head = -1;  // -1 for stages without a head axis
  int row = -1, col = -1;
};

// B − A of two slices of one shape. Cells that are blocked (−inf) or not finite on either side are
// not compared: value 0 and a blocked flag, so every view draws them as blocked cells; `oneSided`
// counts those blocked on one side only (a causal A against a non-causal B: the upper triangle).
struct SliceDifference {
  int rows = 0, cols = 0;
  std::vector<float> values;          // (rows, cols) B − A
  std::vector<std::uint8_t> blocked;  // (rows, cols) 1 = not compared (blocked or not finite)
  int oneSided = 0;
  CellDifference max;                 // over this slice; head = the slices' head
  float lo = -1e-6f, hi = 1e-6f;      // the symmetric scale [−m, m] (symmetricHalfRange)
  bool identical = false;             // every compared cell equal to the bit
};

// m for the difference's scale [−m, m]: the largest |B − A|, or 1e-6 when it is 0 (identical
// sides), so the scale never collapses to a point and 0 stays the middle colour.
float symmetricHalfRange(float maxAbs);

// B − A cell by cell. The error, when the shapes differ, names both shapes.
Result<SliceDifference> sliceDifference(const Slice2D& a, const Slice2D& b);

// The difference as a slice every heatmap view and the exporter draw: A's axes and labels, the
// numbers pointing into d.values (valid while `d` lives), the cells not compared flagged blocked.
Slice2D differenceSlice(const SliceDifference& d, const Slice2D& labels);

// The largest |B − A| of one stage over every head of batch item `batch` (the command line's
// number, and the window's sentence under the maps). The error is differenceBlocker's reason, or
// the batch item one side lacks.
Result<CellDifference> stageMaxDifference(const Trace& a, const Trace& b, StageId stage, int batch);

// "max |B − A| = 0.31 at head 1, query 4 'cat', key 2 'sat' (A 0.12, B 0.43)"; `labels` is A's
// slice at the cell's head (its axes and token labels name the row and the column). Identical
// sides: "B equals A here: every cell of … is the same to the bit". No cell: says so.
std::string differenceWords(const CellDifference& d, const Slice2D& labels);

// The hovered cell on both sides: "query 2 'sat', key 1 'cat': A 0.123, B 0.456, B − A 0.333".
// B's value is given only when B has that cell; no difference when `b` is null, of another shape,
// or `subtract` is false (differenceBlocker found a reason: another h): "…: A 0.123, B 0.2 (no
// difference map)". A blocked cell says "blocked".
std::string hoverWords(const Slice2D& a, const Slice2D* b, int row, int col, bool subtract = true);

// Numbers in the words: 3 significant digits, the same in the window, the CLI and the tests.
std::string formatDifference(float v);

}  // namespace mhascope
