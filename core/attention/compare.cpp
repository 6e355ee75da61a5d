// Two traces side by side (compare.hpp).
#include "attention/compare.hpp"

#include <cmath>
#include <cstdio>

#include "util/format.hpp"

namespace mhascope {
namespace {

std::string n(long long v) { return std::to_string(v); }

std::string shapeText(const Shape& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? " × " : "") + n(static_cast<long long>(s[i]));
  return out;
}

// What a row or column of a slice is called in a sentence.
const char* axisWord(AxisKind kind, const std::string& axis) {
  switch (kind) {
    case AxisKind::QueryTokens: return "query";
    case AxisKind::KeyTokens: return "key";
    default: break;
  }
  return axis == "d_k" || axis == "d_model" ? "feature" : "index";
}

std::string cellName(const Slice2D& s, int r, int c) {
  std::string out = std::string(axisWord(s.rowKind, s.rowAxis)) + " " + n(r);
  if (r < static_cast<int>(s.rowLabels.size()) && (s.rowKind == AxisKind::QueryTokens || s.rowKind == AxisKind::KeyTokens)) {
    out += " '" + s.rowLabels[static_cast<std::size_t>(r)] + "'";
  }
  out += std::string(", ") + axisWord(s.colKind, s.colAxis) + " " + n(c);
  if (c < static_cast<int>(s.colLabels.size()) && (s.colKind == AxisKind::QueryTokens || s.colKind == AxisKind::KeyTokens)) {
    out += " '" + s.colLabels[static_cast<std::size_t>(c)] + "'";
  }
  return out;
}

bool headAxis(const Trace& t, StageId stage) { return stageHasHeads(stage) && t.shapeOf(stage).size() == 4; }

}  // namespace

std::string formatDifference(float v) { return formatGeneral(static_cast<double>(v), 3); }

float symmetricHalfRange(float maxAbs) { return std::isfinite(maxAbs) && maxAbs > 0.0f ? maxAbs : 1e-6f; }

std::string differenceBlocker(const Trace& a, const Trace& b, StageId stage) {
  const std::string name = stageInfo(stage).name;
  const bool ra = stageRecorded(a, stage), rb = stageRecorded(b, stage);
  if (!ra && !rb) return "neither side records the '" + name + "' stage: neither configuration uses it";
  if (!ra) return "A records no '" + name + "' stage (its configuration does not use it); B does";
  if (!rb) return "B records no '" + name + "' stage (its configuration does not use it); A does";
  const Shape& sa = a.shapeOf(stage);
  const Shape& sb = b.shapeOf(stage);
  // The reasons in the order a reader thinks of them: the tokens, then the heads, then the rest.
  if (a.tq != b.tq || a.tk != b.tk) {
    const bool self = a.tq == a.tk && b.tq == b.tk;
    const std::string sym = self ? "T" : (a.tq != b.tq ? "T_q" : "T_k");
    const int ta = self || a.tq != b.tq ? a.tq : a.tk, tb = self || a.tq != b.tq ? b.tq : b.tk;
    if (sa != sb || self) {
      return "different " + sym + ": A has " + sym + " = " + n(ta) + " tokens, B has " + sym + " = " + n(tb) +
             ", so a cell of one has no partner in the other (both are shown side by side)";
    }
  }
  if (headAxis(a, stage) && a.heads != b.heads) {
    return "different h: A has h = " + n(a.heads) + " heads (d_k = " + n(a.dk) + "), B has h = " + n(b.heads) +
           " (d_k = " + n(b.dk) + "), so head i of one does not do the work of head i of the other";
  }
  if (sa != sb) {
    const std::vector<std::string>& axes = a.axesOf(stage);
    std::string which;
    for (std::size_t i = 0; i < sa.size() && i < sb.size(); ++i) {
      if (sa[i] == sb[i]) continue;
      const std::string axis = i < axes.size() ? axes[i] : "axis " + n(static_cast<long long>(i));
      which += (which.empty() ? "" : ", ") + axis + " " + n(static_cast<long long>(sa[i])) + " vs " +
               n(static_cast<long long>(sb[i]));
    }
    return "different shapes of '" + name + "': A " + shapeText(sa) + ", B " + shapeText(sb) +
           (which.empty() ? std::string() : " (" + which + ")");
  }
  return {};
}

Result<SliceDifference> sliceDifference(const Slice2D& a, const Slice2D& b) {
  if (a.rows != b.rows || a.cols != b.cols) {
    return makeError("no difference map: A's slice is " + n(a.rows) + " × " + n(a.cols) + ", B's " + n(b.rows) + " × " +
                     n(b.cols));
  }
  SliceDifference d;
  d.rows = a.rows;
  d.cols = a.cols;
  const std::size_t cells = static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols);
  d.values.assign(cells, 0.0f);
  d.blocked.assign(cells, 0);
  d.max.head = a.head;
  bool identical = true;
  for (int r = 0; r < a.rows; ++r) {
    for (int c = 0; c < a.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * static_cast<std::size_t>(a.cols) + static_cast<std::size_t>(c);
      const float va = a.at(r, c), vb = b.at(r, c);
      // A blocked cell is −inf (masked scores) or flagged (weights, exactly 0): not a number to subtract.
      const bool offA = !std::isfinite(va) || a.isBlockedCell(r, c);
      const bool offB = !std::isfinite(vb) || b.isBlockedCell(r, c);
      if (offA || offB) {
        d.blocked[i] = 1;
        if (offA != offB) ++d.oneSided;
        continue;
      }
      const float diff = vb - va;  // (rows, cols) B − A
      d.values[i] = diff;
      if (diff != 0.0f) identical = false;
      const float m = std::fabs(diff);
      if (!d.max.found || m > d.max.absDiff) {
        d.max.found = true;
        d.max.absDiff = m;
        d.max.a = va;
        d.max.b = vb;
        d.max.row = r;
        d.max.col = c;
      }
    }
  }
  d.identical = d.max.found && identical;
  const float half = symmetricHalfRange(d.max.absDiff);
  d.lo = -half;
  d.hi = half;
  return d;
}

Slice2D differenceSlice(const SliceDifference& d, const Slice2D& labels) {
  Slice2D s;
  s.stage = labels.stage;
  s.weight = labels.weight;
  s.batchIndex = labels.batchIndex;
  s.head = labels.head;
  s.layer = labels.layer;
  s.rows = d.rows;
  s.cols = d.cols;
  s.data = d.values.data();
  s.rowAxis = labels.rowAxis;
  s.colAxis = labels.colAxis;
  s.rowKind = labels.rowKind;
  s.colKind = labels.colKind;
  s.rowLabels = labels.rowLabels;
  s.colLabels = labels.colLabels;
  for (std::uint8_t b : d.blocked) {
    if (b) {
      s.setBlockedCells(d.blocked);
      break;
    }
  }
  return s;
}

Result<CellDifference> stageMaxDifference(const Trace& a, const Trace& b, StageId stage, int batch) {
  if (std::string why = differenceBlocker(a, b, stage); !why.empty()) return makeError(why);
  if (batch < 0 || batch >= a.batch || batch >= b.batch) {
    return makeError("batch item " + n(batch) + " is not on both sides: A has B = " + n(a.batch) + ", B has B = " +
                     n(b.batch));
  }
  const Shape& shape = a.shapeOf(stage);
  const int heads = headAxis(a, stage) ? static_cast<int>(shape[1]) : 1;
  CellDifference best;
  for (int h = 0; h < heads; ++h) {
    const int head = headAxis(a, stage) ? h : -1;
    auto sa = sliceStage(a, stage, batch, head < 0 ? 0 : head);
    auto sb = sliceStage(b, stage, batch, head < 0 ? 0 : head);
    if (!sa) return sa.error();
    if (!sb) return sb.error();
    auto d = sliceDifference(*sa, *sb);
    if (!d) return d.error();
    if (d->max.found && (!best.found || d->max.absDiff > best.absDiff)) {
      best = d->max;
      best.head = head;
    }
  }
  return best;
}

std::string hoverWords(const Slice2D& a, const Slice2D* b, int row, int col, bool subtract) {
  if (row < 0 || col < 0 || row >= a.rows || col >= a.cols) return {};
  auto value = [](const Slice2D& s, int r, int c) {
    const float v = s.at(r, c);
    return s.isBlockedCell(r, c) || v == -INFINITY ? std::string("blocked") : formatDifference(v);
  };
  std::string out = cellName(a, row, col) + ": A " + value(a, row, col);
  const bool bHas = b && row < b->rows && col < b->cols;
  if (bHas) out += ", B " + value(*b, row, col);
  if (!bHas) return out + (b ? ", B has no such cell" : "");
  if (!subtract || b->rows != a.rows || b->cols != a.cols) return out + " (no difference map)";
  const float va = a.at(row, col), vb = b->at(row, col);
  const bool off = a.isBlockedCell(row, col) || b->isBlockedCell(row, col) || !std::isfinite(va) || !std::isfinite(vb);
  return out + (off ? ", B − A not compared (blocked or not finite)" : ", B − A " + formatDifference(vb - va));
}

std::string differenceWords(const CellDifference& d, const Slice2D& labels) {
  if (!d.found) return "no cell to compare: every cell is blocked or not finite on one side or both";
  if (d.absDiff == 0.0f) return "max |B − A| = 0: B equals A to the bit in every compared cell";
  std::string at = d.head >= 0 ? "head " + n(d.head) + ", " : std::string();
  at += cellName(labels, d.row, d.col);
  return "max |B − A| = " + formatDifference(d.absDiff) + " at " + at + " (A " + formatDifference(d.a) + ", B " +
         formatDifference(d.b) + ")";
}

}  // namespace mhascope
