#include "model_source/training_page.hpp"

#include <algorithm>
#include <limits>
#include <memory>

#include "analysis/circuit_texts.hpp"
#include "analysis/head_roles.hpp"
#include "color/colormap.hpp"

namespace mhascope {

using train::Evaluation;
using train::Snapshot;

namespace {
std::string headTitle(int layer, int head) { return analysis::headName(layer, head); }
}  // namespace

std::uint32_t headRgb(int layer, int head, int heads) {
  const RGBA8 c = headLineColor(layer * heads + head);
  return (static_cast<std::uint32_t>(c.r) << 16) | (static_cast<std::uint32_t>(c.g) << 8) | c.b;
}

Result<ContactSheet> runContactSheet(const std::vector<const Snapshot*>& snapshots, const std::vector<std::int64_t>& steps,
                                     const std::vector<std::pair<int, int>>& heads, const std::vector<std::string>& tokens,
                                     int L, int H, const std::string& title) {
  if (heads.empty()) return makeError("choose at least one head for the contact sheet (the 'sheet' column)");
  ContactSheet sheet;
  const int T = static_cast<int>(tokens.size());
  sheet.title = title;
  sheet.steps = steps;
  sheet.seq = T;
  sheet.tokens = tokens;
  const std::size_t tt = static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  for (auto [l, i] : heads) {
    sheet.rowTitles.push_back(headTitle(l, i));
    for (std::int64_t step : sheet.steps) {
      const Snapshot* snap = nullptr;
      for (const Snapshot* s : snapshots) {
        if (s && s->step == step) snap = s;
      }
      if (!snap) return makeError("no attention snapshot was kept at step " + std::to_string(step));
      if (snap->layers != L || snap->heads != H || snap->seq != T) {
        return makeError("the attention snapshot of step " + std::to_string(step) + " is of another run's size");
      }
      const auto begin = snap->weights.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(l * H + i) * tt);
      sheet.maps.emplace_back(begin, begin + static_cast<std::ptrdiff_t>(tt));
    }
  }
  return sheet;
}

CurvesFigure runCurves(const std::vector<Evaluation>& history, int L, int H, const std::string& title, bool logY,
                       std::int64_t markStep, const std::function<std::uint32_t(int, int)>& headRgb) {
  CurvesFigure fig;
  fig.title = title;
  fig.markStep = markStep;
  CurveSeries loss{"probe loss", {}, {}, 0xd62728, false}, acc{"probe accuracy", {}, {}, 0x2ca02c, false};
  for (const Evaluation& e : history) {
    loss.xs.push_back(static_cast<double>(e.step));
    loss.ys.push_back(e.loss);
    acc.xs.push_back(static_cast<double>(e.step));
    acc.ys.push_back(e.accuracy);
  }
  fig.panels.push_back({"probe loss (nats)", {loss}, logY, true, {}});
  fig.panels.push_back({"probe accuracy", {acc}, false, true, {}});
  // Previous-token at a token's first occurrence (prevTokenNew): the positions the induction
  // head's keys look at, and the score the circuit needs; over all queries it averages in the
  // repeats, where the same head may look elsewhere.
  CurvePanel prev{"previous-token score at first occurrences", {}, false, true, {kRoleThreshold}};
  CurvePanel ind{"prefix matching (induction) score", {}, false, true, {kRoleThreshold}};
  for (int l = 0; l < L; ++l) {
    for (int i = 0; i < H; ++i) {
      CurveSeries p{headTitle(l, i), {}, {}, headRgb(l, i), l > 0};
      CurveSeries q = p;
      for (const Evaluation& e : history) {
        if (!e.complete()) continue;
        p.xs.push_back(static_cast<double>(e.step));
        p.ys.push_back(e.at(l, i).prevTokenNew);
        q.xs.push_back(static_cast<double>(e.step));
        q.ys.push_back(e.at(l, i).induction);
      }
      prev.series.push_back(std::move(p));
      ind.series.push_back(std::move(q));
    }
  }
  fig.panels.push_back(std::move(prev));
  fig.panels.push_back(std::move(ind));
  return fig;
}

Result<HtmlExport> trainingTimelinePage(const std::vector<Evaluation>& history, const std::vector<const Snapshot*>& given,
                                        const std::vector<std::string>& tokens, int L, int H, const std::string& title) {
  std::vector<const Snapshot*> snaps;
  for (const Snapshot* s : given) {
    if (s && s->layers == L && s->heads == H && s->seq == static_cast<int>(tokens.size())) snaps.push_back(s);
  }
  if (snaps.empty()) return makeError("no attention pictures of this run were kept: train or step first");
  std::sort(snaps.begin(), snaps.end(), [](const Snapshot* a, const Snapshot* b) { return a->step < b->step; });
  const int T = static_cast<int>(tokens.size());
  const std::size_t tt = static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
  // The causal mask, as every view draws it: keys after the query blocked.
  auto blocked = std::make_shared<std::vector<std::uint8_t>>(tt, 0);
  for (int q = 0; q < T; ++q) {
    for (int k = q + 1; k < T; ++k) (*blocked)[static_cast<std::size_t>(q) * T + k] = 1;
  }
  HtmlExport page;
  page.grid = true;
  page.gridColumns = H;
  page.options.title = title;
  page.options.subtitle = "every head's attention on the probe sequence (T = " + std::to_string(T) +
                          ") at the chosen step; the curves over every evaluation";
  page.options.range = ColorRange{0.0f, 1.0f};
  for (int l = 0; l < L; ++l) page.rowHeadings.push_back("layer " + std::to_string(l));
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) page.names.push_back(headTitle(l, h));
  }
  for (const Snapshot* snap : snaps) {
    HtmlFrame f;
    f.step = snap->step;
    const Evaluation* e = nullptr;
    for (const Evaluation& x : history) {
      if (x.step == snap->step && x.complete()) e = &x;
    }
    for (int l = 0; l < L; ++l) {
      for (int h = 0; h < H; ++h) {
        Slice2D s;
        s.stage = StageId::Weights;
        s.layer = l;
        s.head = h;
        s.rows = s.cols = T;
        const auto begin = snap->weights.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(l * H + h) * tt);
        auto values = std::make_shared<const std::vector<float>>(begin, begin + static_cast<std::ptrdiff_t>(tt));
        s.data = values->data();
        s.owned = std::move(values);
        s.blockedCells = blocked->data();
        s.ownBlocked = blocked;
        s.rowAxis = "T_q";
        s.colAxis = "T_k";
        s.rowKind = AxisKind::QueryTokens;
        s.colKind = AxisKind::KeyTokens;
        s.rowLabels = s.colLabels = tokens;
        f.slices.push_back(std::move(s));
        f.notes.push_back(e ? "step " + std::to_string(f.step) + ": " + roleOf(roleScoresOf(e->at(l, h), l)) : std::string());
      }
    }
    page.frames.push_back(std::move(f));
  }
  // The curves the Train mode draws, every evaluation.
  const CurvesFigure fig = runCurves(history, L, H, title, false, -1, [](int, int) { return 0u; });
  for (const CurvePanel& p : fig.panels) {
    for (const CurveSeries& c : p.series) {
      HtmlCurve hc;
      hc.panel = p.title;
      hc.name = c.name;
      for (double x : c.xs) hc.steps.push_back(static_cast<std::int64_t>(x));
      hc.values = c.ys;
      page.curves.push_back(std::move(hc));
    }
  }
  page.sourceNote = "Roles by the one rule of the Train mode and the Model tab; an induction head: " + inductionRuleText() + ".";
  return page;
}

}  // namespace mhascope
