// The induction circuit check, the roles lesson of one run and the ablation lesson.
#include "train/circuit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attention/engine.hpp"  // alibiSlopes
#include "util/format.hpp"

namespace mhascope::train {
namespace {

std::string headName(int layer, int head) { return "layer " + std::to_string(layer) + " head " + std::to_string(head); }

std::string stepText(std::int64_t step) { return "step " + std::to_string(step); }

}  // namespace

CircuitCheck inductionCircuit(const Evaluation& e) {
  CircuitCheck c;
  c.loss = e.loss;
  if (!e.complete()) return c;  // no scores: nothing formed, nothing to index
  for (int l = 1; l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      if (c.inductionLayer < 0 || e.at(l, i).induction > c.induction) {
        c.induction = e.at(l, i).induction;
        c.copying = e.at(l, i).copying;
        c.inductionLayer = l;
        c.inductionHead = i;
      }
    }
  }
  // The previous-token head must sit below the induction head (its output reaches the induction
  // head's keys only through the residual stream); a 1-layer model: the best in layer 0.
  const int below = c.inductionLayer < 0 ? 1 : c.inductionLayer;
  for (int l = 0; l < below && l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      if (c.prevLayer < 0 || e.at(l, i).prevTokenNew > c.prev) {
        c.prev = e.at(l, i).prevTokenNew;
        c.prevLayer = l;
        c.prevHead = i;
      }
    }
  }
  c.formed = c.inductionLayer >= 1 && c.loss < 0.5 && c.prev >= kRoleThreshold && c.induction >= kRoleThreshold &&
             c.copying >= kCopyingThreshold;
  return c;
}

std::int64_t circuitFormedAt(const std::vector<Evaluation>& history, std::size_t upTo) {
  for (std::size_t i = 0; i < history.size() && i <= upTo; ++i) {
    if (inductionCircuit(history[i]).formed) return history[i].step;
  }
  return -1;
}

std::int64_t firstStepAbove(const std::vector<Evaluation>& history, std::size_t upTo, int layer, int head,
                            double HeadScores::*score, double threshold) {
  for (std::size_t i = 0; i < history.size() && i <= upTo; ++i) {
    const Evaluation& e = history[i];
    if (e.complete() && layer >= 0 && head >= 0 && layer < e.layers && head < e.heads && e.at(layer, head).*score >= threshold) {
      return e.step;
    }
  }
  return -1;
}

LossFall lossFall(const std::vector<Evaluation>& history, std::size_t upTo) {
  LossFall f;
  if (history.empty()) return f;
  const std::size_t last = std::min(upTo, history.size() - 1);
  f.start = history[0].loss;
  double drop = 0;
  for (std::size_t i = 0; i <= last; ++i) {
    if (f.left < 0 && history[i].loss < 0.9 * f.start) f.left = history[i].step;
    if (i > 0 && history[i - 1].loss - history[i].loss > drop) {
      drop = history[i - 1].loss - history[i].loss;
      f.fallFrom = history[i - 1].step;
      f.fallTo = history[i].step;
      f.lossFrom = history[i - 1].loss;
      f.lossTo = history[i].loss;
    }
  }
  return f;
}

double alibiPreviousTokenBound(double slope, int periodMin, int periodMax) {
  double sum = 0;
  std::int64_t queries = 0;
  for (int k = std::max(periodMin, 1); k <= periodMax; ++k) {
    for (int t = 1; t < k; ++t) {
      sum += -std::expm1(-slope) / -std::expm1(-slope * t);  // (1 − e^−m) / (1 − e^−m·t)
      ++queries;
    }
  }
  return queries > 0 ? sum / static_cast<double>(queries) : 0.0;
}

std::string alibiPreviousTokenNote(const GptConfig& model, const TaskConfig& task) {
  if (model.positions != TrainPositions::Alibi || task.kind != TaskKind::Induction || model.layers < 2) return "";
  const std::vector<float> slopes = alibiSlopes(model.heads);
  if (slopes.empty()) return "";
  const double m = *std::max_element(slopes.begin(), slopes.end());
  const double bound = alibiPreviousTokenBound(m, task.periodMin, task.periodMax);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", m);
  std::string s = "Under ALiBi a layer-0 head has no position table: only the bias -m (t - j) tells its keys apart, and at "
                  "a token's first occurrence every earlier key holds a different random token, so its content cannot "
                  "point at key t - 1. The most such a head can put there is (1 - e^-m) / (1 - e^-m t) for query t: "
                  "on average " + formatFixed(bound, 2) + " over the first occurrences with this model's steepest slope m = " +
                  buf + " (h = " + std::to_string(model.heads) + ", periods " + std::to_string(task.periodMin) + "-" +
                  std::to_string(task.periodMax) + ")";
  s += bound < kRoleThreshold
           ? ", below the " + formatFixed(kRoleThreshold, 2) + " a previous-token head needs: no head can take that role, so the "
                 "circuit can never count as formed here, though a blurred induction mechanism can still lower the loss."
           : ", enough for the " + formatFixed(kRoleThreshold, 2) + " a previous-token head needs.";
  return s;
}

std::vector<std::string> circuitLesson(const std::vector<Evaluation>& history, std::size_t upTo, TaskKind task) {
  std::vector<std::string> out;
  if (history.empty()) return out;
  if (upTo >= history.size()) upTo = history.size() - 1;
  const Evaluation& e = history[upTo];
  if (!e.complete()) return out;
  const std::string at = "At step " + std::to_string(e.step) + " ";
  if (task == TaskKind::Reverse) {
    out.push_back(at + "(reverse): after SEP each position must copy the token mirrored around SEP, so look for an "
                  "anti-diagonal in the rows after SEP and the columns before it (the lower-left block of the "
                  "weights). Probe loss " + formatFixed(e.loss, 2) + ".");
  } else if (task == TaskKind::Sort) {
    out.push_back(at + "(sort): after SEP each output is the smallest input not yet written — which can equal the "
                  "current one when the input repeats a token — so heads attend to the first half by token value, "
                  "not by position. Probe loss " + formatFixed(e.loss, 2) + ".");
  } else if (task == TaskKind::Text) {
    out.push_back(at + "(text): next-character prediction mixes previous-token heads (spelling) with heads that look "
                  "further back; roles below. Probe loss " + formatFixed(e.loss, 2) + ".");
  }
  const CircuitCheck c = inductionCircuit(e);
  if (task != TaskKind::Induction) {
    // Induction is measured on the same repeated random tokens for every task.
    if (c.inductionLayer >= 0) {
      out.push_back("On repeated random tokens (the same check for every task), the best prefix matching is " +
                    headName(c.inductionLayer, c.inductionHead) + "'s " + formatFixed(c.induction, 2) + " with copying " +
                    formatFixed(c.copying, 2) + (isInductionHead(e.at(c.inductionLayer, c.inductionHead), c.inductionLayer)
                                             ? ": an induction head."
                                             : ": no induction head (both must reach " + formatFixed(kRoleThreshold, 2) + ")."));
    }
    return out;
  }
  if (e.layers < 2) {
    out.push_back("One layer is the control: predicting a repeat needs to find where the current token occurred "
                  "before and read the token AFTER it. A single attention layer sees only the tokens themselves (and "
                  "their positions), not what preceded each key, so no head can point at \"the key after the earlier "
                  "copy\" — the loss stays high and no head becomes an induction head.");
    out.push_back(at + "the best previous-token head is " + headName(0, c.prevHead) + " (" + formatFixed(c.prev, 2) +
                  " at first occurrences); probe loss " + formatFixed(e.loss, 2) + ". Add a second layer to see the circuit form.");
    return out;
  }
  const HeadScores& ps = e.at(c.prevLayer, c.prevHead);
  const bool prevOk = c.prev >= kRoleThreshold;
  const bool matchOk = c.induction >= kRoleThreshold, copyOk = c.copying >= kCopyingThreshold;
  const std::int64_t prevSince = firstStepAbove(history, upTo, c.prevLayer, c.prevHead, &HeadScores::prevTokenNew);
  const std::int64_t matchSince = firstStepAbove(history, upTo, c.inductionLayer, c.inductionHead, &HeadScores::induction);
  const std::int64_t copySince =
      firstStepAbove(history, upTo, c.inductionLayer, c.inductionHead, &HeadScores::copying, kCopyingThreshold);
  const std::string prevName = headName(c.prevLayer, c.prevHead), indName = headName(c.inductionLayer, c.inductionHead);
  const std::string split = formatFixed(ps.prevTokenNew, 2) + " on the previous token where the query's token is new, " +
                            formatFixed(ps.prevTokenSeen, 2) + " where it repeats, " + formatFixed(ps.prevToken, 2) + " over all";
  std::string p = at;
  if (prevOk) {
    p += prevName + " is a previous-token head at first occurrences since " + stepText(prevSince) + " (" + split +
         "): there each position copies in the token before it, so those keys also carry \"who came before me\" — "
         "and the keys after a token's first copy are such positions.";
    if (ps.prevTokenSeen < kRoleThreshold) p += " Where the token repeats it looks elsewhere: it is not a previous-token head everywhere.";
  } else {
    p += "no head below layer " + std::to_string(c.inductionLayer) + " is a previous-token head (best: " + prevName +
         ", " + split + "; the role needs " + formatFixed(kRoleThreshold, 2) + " at first occurrences).";
  }
  out.push_back(p);
  const std::string scores = "prefix matching " + formatFixed(c.induction, 2) + ", copying " + formatFixed(c.copying, 2);
  std::string q;
  if (matchOk && copyOk) {
    // Told in the order they happened.
    const std::string passed = copySince < matchSince
                                   ? "copying passed " + formatFixed(kCopyingThreshold, 2) + " at " + stepText(copySince) +
                                         ", prefix matching at " + stepText(matchSince)
                                   : "prefix matching passed " + formatFixed(kRoleThreshold, 2) + " at " + stepText(matchSince) +
                                         ", copying at " + stepText(copySince);
    q = indName + " is an induction head (" + scores + "; " + passed + "): its query attends to the keys that follow earlier copies of the query's token, and what it writes makes "
        "that key's token the top prediction.";
    if (prevOk) {
      q += " Finding those keys needs to know each key's previous token — what " + prevName +
           " writes into the residual stream; cutting that head from this layer's keys alone (its cut K box in the Roles table) tests it: "
           "if the keys read it, prefix matching collapses, while a cut from the queries alone leaves it.";
    } else {
      q += " It matches although no previous-token head passes the threshold: the information comes from a head "
           "below it that does part of that job (" + prevName + " is the closest).";
    }
  } else if (matchOk || copyOk || c.induction >= 0.5 * kRoleThreshold) {
    q = indName + " is forming as an induction head (" + scores + "; both must reach " + formatFixed(kRoleThreshold, 2) +
        (matchOk ? "; copying is still below" : copyOk ? "; prefix matching is still below" : "") + ").";
  } else {
    q = "No head in layers 1 and up is an induction head yet (best: " + indName + ", " + scores + ").";
  }
  int others = 0;
  std::string list;
  for (int l = 1; l < e.layers; ++l) {
    for (int i = 0; i < e.heads; ++i) {
      if ((l != c.inductionLayer || i != c.inductionHead) && isInductionHead(e.at(l, i), l)) {
        ++others;
        list += (list.empty() ? "" : ", ") + headName(l, i) + " (" + formatFixed(e.at(l, i).induction, 2) + ", " +
                formatFixed(e.at(l, i).copying, 2) + ")";
      }
    }
  }
  if (others > 0) q += " Also an induction head: " + list + " — the model holds more than one.";
  out.push_back(q);
  const LossFall f = lossFall(history, upTo);
  const std::int64_t formed = circuitFormedAt(history, upTo);
  std::string r;
  if (formed >= 0) {
    r = "The circuit counts as formed at " + stepText(formed) + " (probe loss < 0.5, previous-token, prefix matching "
        "and copying all at or above their thresholds).";
    if (f.left >= 0 && f.left <= formed) {
      r += " The loss had left its plateau before that: it was below 90 % of its first value (" + formatFixed(f.start, 2) +
           ") from " + stepText(f.left) + ", and fell fastest between steps " + std::to_string(f.fallFrom) + " and " +
           std::to_string(f.fallTo) + " (" + formatFixed(f.lossFrom, 2) + " → " + formatFixed(f.lossTo, 2) +
           ") — the phase change. The thresholds are fixed lines the scores cross partway up, so the step all of them are met comes later.";
    }
    r += " A likely reason the fall is abrupt (a hypothesis, not measured by this run): neither head lowers the "
         "loss alone — the previous-token head's output helps only once a later head's keys read it, and the "
         "induction head has nothing to match until it is written — so both grow slowly together until they work "
         "as a pair. Switching either head off (the roles table's off column) shows what each does now, not how "
         "they grew.";
  } else {
    r = "The circuit has not formed yet (probe loss " + formatFixed(e.loss, 2) + ", needs < 0.5 with previous-token, prefix "
        "matching and copying at or above " + formatFixed(kRoleThreshold, 2) + ").";
    if (f.left >= 0) {
      r += " The loss has left its plateau (below 90 % of " + formatFixed(f.start, 2) + " from " + stepText(f.left) +
           "; fastest fall between steps " + std::to_string(f.fallFrom) + " and " + std::to_string(f.fallTo) + ").";
    }
  }
  out.push_back(r);
  return out;
}

std::vector<std::string> ablationLesson(const Evaluation& full, const Evaluation& ablated, const HeadMask& mask,
                                        int vocab, const std::vector<Evaluation>& alone) {
  std::vector<std::string> out;
  if (!full.complete() || !ablated.complete() || mask.layers != full.layers || mask.heads != full.heads ||
      mask.off.size() != full.scores.size()) {
    return out;
  }
  std::vector<std::pair<int, int>> off;
  std::string cuts;
  for (int l = 0; l < mask.layers; ++l) {
    for (int i = 0; i < mask.heads; ++i) {
      if (mask.isOff(l, i)) off.emplace_back(l, i);
      const std::uint8_t r = mask.readsCut(l, i);
      if (r != 0 && !mask.isOff(l, i)) {
        std::string what;
        for (auto [bit, name] : {std::pair{kReadQuery, "queries"}, {kReadKey, "keys"}, {kReadValue, "values"}}) {
          if (r & bit) what += std::string(what.empty() ? "" : " and ") + name;
        }
        cuts += (cuts.empty() ? "" : "; ") + headName(l, i) + " cut from later layers' " + what;
      }
    }
  }
  if (off.empty() && cuts.empty()) return out;
  const double lnV = std::log(static_cast<double>(std::max(vocab, 2)));
  std::string names;
  for (std::size_t k = 0; k < off.size(); ++k) names += (k ? (k + 1 == off.size() ? " and " : ", ") : "") + headName(off[k].first, off[k].second);
  std::string p = "With " + (off.empty() ? std::string() : names + " off") + (off.empty() || cuts.empty() ? "" : ", and ") +
                  cuts + ", the probe loss goes from " + formatFixed(full.loss, 3) + " to " + formatFixed(ablated.loss, 3) + ". ";
  if (ablated.loss > lnV) {
    p += "That is above ln V = " + formatFixed(lnV, 2) + ", the loss of a uniform guess over the " + std::to_string(vocab) +
         " tokens: the model is now confidently wrong — it still predicts, and puts its weight on wrong tokens.";
  } else {
    p += "ln V = " + formatFixed(lnV, 2) + " would be a uniform guess over the " + std::to_string(vocab) + " tokens.";
  }
  out.push_back(p);
  if (off.size() >= 2 && alone.size() == off.size()) {
    std::string each;
    double worst = 0;
    for (std::size_t k = 0; k < off.size(); ++k) {
      each += (k ? ", " : "") + headName(off[k].first, off[k].second) + " alone " + formatFixed(alone[k].loss, 3);
      worst = std::max(worst, alone[k].loss);
    }
    std::string q = "Each alone: " + each + ". ";
    if (ablated.loss > 2 * worst + 0.1) {
      q += "Together they cost far more than either alone: the heads are partly redundant — each covers much of "
           "what the other does, so one off hurts little.";
    } else {
      q += "Together they cost about what the worst one alone does.";
    }
    out.push_back(q);
  }
  // The heads that stay on: their roles in the ablated run, where they moved.
  std::string moved;
  for (int l = 0; l < full.layers; ++l) {
    for (int i = 0; i < full.heads; ++i) {
      if (mask.isOff(l, i)) continue;
      const HeadScores &a = full.at(l, i), &b = ablated.at(l, i);
      if (std::abs(a.induction - b.induction) >= 0.2 || std::abs(a.copying - b.copying) >= 0.2 ||
          std::abs(a.prevToken - b.prevToken) >= 0.2) {
        moved += (moved.empty() ? "" : "; ") + headName(l, i) + ": prefix matching " + formatFixed(a.induction, 2) + " → " +
                 formatFixed(b.induction, 2) + ", copying " + formatFixed(a.copying, 2) + " → " + formatFixed(b.copying, 2) + " (now " +
                 roleOf(b, l) + ")";
      }
    }
  }
  if (!moved.empty()) {
    std::string m = "With those heads off or cut, the heads that stay on change: " + moved + ".";
    bool keysOnlyDrop = false;
    for (int l = 0; l < mask.layers; ++l) {
      for (int i = 0; i < mask.heads; ++i) {
        if (mask.readsCut(l, i) != kReadKey || mask.isOff(l, i)) continue;
        for (int m2 = l + 1; m2 < full.layers; ++m2) {
          for (int j = 0; j < full.heads; ++j) {
            if (full.at(m2, j).induction >= kRoleThreshold && ablated.at(m2, j).induction < kRoleThreshold) keysOnlyDrop = true;
          }
        }
      }
    }
    if (keysOnlyDrop) {
      m += " Only the keys lost the earlier head's output, so the induction head's keys read what it wrote into the "
           "residual stream: K-composition.";
    }
    out.push_back(m);
  } else {
    out.push_back("No head that stays on changed its prefix matching, copying or previous-token score by 0.2 or more.");
  }
  if (!off.empty()) out.push_back("A head that is off writes nothing: its scores describe where it looks, not what it adds.");
  return out;
}

Result<std::vector<std::string>> ablationLesson(const GptParams& p, const HeadMask& mask, const Batch& probe,
                                                ForwardCache& cache) {
  auto full = evaluateOnProbe(p, probe, 0, cache);
  if (!full) return full.error();
  auto ablated = evaluateAblated(p, mask, probe, 0, cache);
  if (!ablated) return ablated.error();
  std::vector<Evaluation> alone;
  int count = 0;
  for (bool b : mask.off) count += b ? 1 : 0;
  if (count >= 2) {
    for (int l = 0; l < mask.layers; ++l) {
      for (int i = 0; i < mask.heads; ++i) {
        if (!mask.isOff(l, i)) continue;
        HeadMask one = HeadMask::none(p.cfg);
        one.set(l, i, true);
        auto r = evaluateAblated(p, one, probe, 0, cache);
        if (!r) return r.error();
        alone.push_back(r->evaluation);
      }
    }
  }
  return ablationLesson(full->evaluation, ablated->evaluation, mask, p.cfg.vocab, alone);
}

}  // namespace mhascope::train
