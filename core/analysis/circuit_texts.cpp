// The words beside each circuits view (circuit_texts.hpp), built from the numbers they explain.
#include "analysis/circuit_texts.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "util/format.hpp"

namespace mhascope::analysis {

namespace {

std::string percent1(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * share);
  return buf;
}

// What a copying score near 1 says and does not, and where to look instead.
constexpr const char* kCopyingCaveat =
    " Near 1 (every eigenvalue positive real) is consistent with copying, not proof of it: a head that always "
    "raises one fixed token, whatever it attends to, scores 1 too. The diagonal of E OV U asks the copying "
    "question itself: for how many tokens does attending to the token raise its own logit above every other?";

// Token-space matrices multiply by the raw embedding on both sides.
constexpr const char* kDirectPath =
    " E QK Eᵀ and E OV U are the direct path from the raw embedding: for a head after layer 0 they leave out "
    "what earlier layers (and MLPs) wrote into its input.";

}  // namespace

const char* compositionMeaning(char kind) {
  switch (kind) {
    case 'Q': return "Q-composition: the later head's queries read what the earlier head wrote (where it looks from).";
    case 'K': return "K-composition: the later head's keys read what the earlier head wrote — how an induction head "
                     "finds the token after an earlier copy of its own, through a previous-token head's output.";
    default: return "V-composition: the later head's values read what the earlier head wrote (what it moves on is "
                    "a mix of the earlier head's output).";
  }
}

std::string headName(int layer, int head) { return "layer " + std::to_string(layer) + " head " + std::to_string(head); }

std::string compositionText(const Circuits& c, char kind) {
  const Composition* best = strongestPair(c, kind);
  if (!best) {
    return "No pairs: this model has " + std::to_string(c.layers) +
           " layer, and composition needs a head of a later layer reading one of an earlier layer.";
  }
  const double score = compositionScore(*best, kind);
  std::string s = std::string("Strongest ") + kind + "-composition: " + headName(best->fromLayer, best->fromHead) +
                  " → " + headName(best->toLayer, best->toHead) + ", " + formatFixed(score, 3) + " against the random baseline " +
                  formatFixed(c.baseline, 3);
  if (c.baseline > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, " (%.1f times)", score / c.baseline);
    s += ratio;
  }
  s += ". ";
  s += compositionMeaning(kind);
  s += score <= c.baseline ? " No pair is above the baseline: no head reads another this way more than chance."
                           : " Scores near the baseline mean no more than chance.";
  return s;
}

std::string copyingText(const Circuits& c) {
  if (c.perHead.empty()) return "";
  const auto [lo, hi] = std::minmax_element(c.perHead.begin(), c.perHead.end(),
                                            [](const HeadCircuit& a, const HeadCircuit& b) { return a.copying < b.copying; });
  std::string s = "Copying score (the eigenvalues of E OV U: their sum over the sum of their moduli): highest " +
                  headName(hi->layer, hi->head) + " " + formatFixed(hi->copying, 3) + ", lowest " +
                  headName(lo->layer, lo->head) + " " + formatFixed(lo->copying, 3) + "." + kCopyingCaveat;
  if (c.tokenSpace) {
    s += " For " + headName(hi->layer, hi->head) + ": " + percent1(hi->diagonalTop) + " of the " +
         std::to_string(c.vocab) + " tokens; for " + headName(lo->layer, lo->head) + ": " +
         percent1(lo->diagonalTop) + ".";
  } else {
    s += " That check needs the token-space matrices, left out above a vocabulary of " +
         std::to_string(kMaxTokenSpaceVocab) + ".";
  }
  return s + " Near 0 the head moves tokens without copying them; below 0 it tends to lower them.";
}

namespace {

// "key t − 1 is the highest visible key of 15 of the 31 query rows t ≥ 1 (the rows where …)"
std::string positionMapWords(const RowMatrix& m) {
  const int p = static_cast<int>(std::min(m.rows(), m.cols()));
  return "key t − 1 is the highest visible key of " + std::to_string(previousPositionRows(m)) + " of the " +
         std::to_string(std::max(0, p - 1)) + " query rows t ≥ 1 (the rows where the positions alone point the head at the previous token)";
}

}  // namespace

std::string headCircuitText(const Circuits& c, int layer, int head) {
  if (layer < 0 || layer >= c.layers || head < 0 || head >= c.heads) return "";
  const HeadCircuit& h = c.at(layer, head);
  std::string s = headName(layer, head) + ": copying score " + formatFixed(h.copying, 3) + ", ||QK||_F " +
                  formatFixed(static_cast<double>(h.qk.norm()), 3) + ", ||OV||_F " + formatFixed(static_cast<double>(h.ov.norm()), 3) +
                  ". QK: query x_t scores key x_j with x_t QK x_jT; OV: the head writes x_j OV for each key it attends to.";
  if (c.tokenSpace) {
    s += " E QK Eᵀ: which token looks at which (a previous-token head finds its key by position, which this leaves "
         "out: little structure there is expected). E OV U: attending to a token (row) raises the logits of the "
         "tokens in its bright cells; a copying head has a bright diagonal: here " + percent1(h.diagonalTop) +
         " of the tokens raise their own logit most.";
    s += kDirectPath;
  } else {
    s += " The token-space matrices are left out above a vocabulary of " + std::to_string(kMaxTokenSpaceVocab) + ".";
  }
  if (c.positions > 1 && h.qkPositions.rows() == c.positions) {
    s += " P QK PT: the score from the learned positions alone; " + positionMapWords(h.qkPositions) + ".";
  }
  return s;
}

std::string compositionScaleText(double baseline, double top) {
  return "One colour scale for every composition map here, Q, K and V and every head alike: 0 … " + formatFixed(top, 3) +
         " (the largest score shown). The random baseline " + formatFixed(baseline, 3) +
         " (the mean score of random heads of these shapes) is the white mark on each colour bar: a score near it is "
         "no more than chance.";
}

// [SECTION] virtual heads

namespace {

std::string linesOf(const std::vector<const Composition*>& top, const std::function<double(int, int)>& alone) {
  std::string s;
  for (const Composition* p : top) {
    s += virtualHeadLine(*p, alone(p->fromLayer, p->fromHead), alone(p->toLayer, p->toHead)) + ".\n";
  }
  return s;
}

}  // namespace

std::string virtualHeadLine(const Composition& p, double aloneA, double aloneB) {
  return headName(p.fromLayer, p.fromHead) + " → " + headName(p.toLayer, p.toHead) + " through the values: V " +
         formatFixed(p.v, 3) + ", copying " + formatFixed(p.virtualCopying, 3, true) + " (each alone: " + formatFixed(aloneA, 3, true) + ", " +
         formatFixed(aloneB, 3, true) + ")";
}

const char* virtualHeadMeaning() {
  return "A virtual head is the path through both OVs, OV^a OV^b: what the later head moves on when its values "
         "read what the earlier one wrote. Its copying score is the eigenvalue ratio of E OV^a OV^b U, like a "
         "head's own: two heads that each lower the tokens they attend to can copy together (a minus times a minus).";
}

std::string virtualHeadsText(const Circuits& c) {
  if (c.pairs.empty()) return "No virtual heads: a one-layer model has no pair of heads in different layers.";
  const auto alone = [&](int l, int h) { return c.at(l, h).copying; };
  return "Virtual heads of the pairs V-composition ranks first:\n" + linesOf(topValuePairs(c.pairs, kTopVirtualPairs), alone) +
         virtualHeadMeaning();
}

std::string virtualPairText(const Circuits& c, const Composition& p) {
  std::string s = virtualHeadLine(p, c.at(p.fromLayer, p.fromHead).copying, c.at(p.toLayer, p.toHead).copying) + ".";
  const std::size_t i = static_cast<std::size_t>(&p - c.pairs.data());
  if (i < c.virtualDiagonalTop.size()) {
    s += " Its E OV^a OV^b U: " + percent1(c.virtualDiagonalTop[i]) + " of the " + std::to_string(c.vocab) +
         " tokens raise their own logit most.";
  }
  return s;
}

std::string oneHeadVirtualHeadsText(const OneHeadCircuits& c) {
  const std::vector<Composition> through = pairsThrough(c);
  if (through.empty()) return "No virtual heads: a one-layer model has no pair of heads in different layers.";
  const auto alone = [&](int l, int h) { return c.copyingAt(l, h); };
  return "Virtual heads through " + headName(c.layer, c.head) + ", the pairs V-composition ranks first:\n" +
         linesOf(topValuePairs(through, kTopVirtualPairs), alone) + virtualHeadMeaning();
}

std::string pickedVirtualText(const OneHeadCircuits& c) {
  if (!c.picked) return "";
  const VirtualHead& v = *c.picked;
  std::string s = headName(v.fromLayer, v.fromHead) + " → " + headName(v.toLayer, v.toHead) + " through the values: copying " +
                  formatFixed(v.copying, 3, true) + " (each alone: " + formatFixed(c.copyingAt(v.fromLayer, v.fromHead), 3, true) + ", " +
                  formatFixed(c.copyingAt(v.toLayer, v.toHead), 3, true) + ")";
  if (v.diagonalTop >= 0) {
    s += "; its E OV^a OV^b U over the text's " + std::to_string(v.ovTokens.rows()) + " tokens: " + percent1(v.diagonalTop) +
         " raise their own logit most";
  }
  return s + ".";
}

// [SECTION] one head

namespace {

std::string againstBaseline(double score, double baseline) {
  std::string s = formatFixed(score, 3) + " against the random baseline " + formatFixed(baseline, 3);
  if (baseline > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.1f times)", score / baseline);
    s += buf;
  }
  return s;
}

}  // namespace

std::string oneHeadCompositionText(const OneHeadCircuits& c, char kind) {
  const std::string me = headName(c.layer, c.head);
  std::string s = std::string(1, kind) + "-composition of " + me + ": ";
  if (const auto* r = strongestPair(c.reads, kind)) {
    s += "it reads " + headName(r->fromLayer, r->fromHead) + " most, " +
         againstBaseline(compositionScore(*r, kind), c.baseline) + "; ";
  } else {
    s += "it is in the first layer, with no earlier head to read; ";
  }
  if (const auto* r = strongestPair(c.readBy, kind)) {
    s += headName(r->toLayer, r->toHead) + " reads it most, " +
         againstBaseline(compositionScore(*r, kind), c.baseline) + ". ";
  } else {
    s += "it is in the last layer, so no later head reads it. ";
  }
  s += compositionMeaning(kind);
  s += " Scores near the baseline mean no more than chance.";
  return s;
}

std::string oneHeadCopyingText(const OneHeadCircuits& c) {
  if (c.copying.empty()) return "";
  const auto [lo, hi] = std::minmax_element(c.copying.begin(), c.copying.end());
  const int iHi = static_cast<int>(hi - c.copying.begin()), iLo = static_cast<int>(lo - c.copying.begin());
  return "Copying score over the whole vocabulary of " + std::to_string(c.vocab) +
         " (the eigenvalues of E OV U: their sum over the sum of their moduli): highest " +
         headName(iHi / c.heads, iHi % c.heads) + " " + formatFixed(*hi, 3) + ", lowest " +
         headName(iLo / c.heads, iLo % c.heads) + " " + formatFixed(*lo, 3) + "; " + headName(c.layer, c.head) +
         " " + formatFixed(c.copyingAt(c.layer, c.head), 3) + "." + kCopyingCaveat + " For " + headName(c.layer, c.head) +
         ", over the " + std::to_string(c.tokenIds.size()) + " tokens of its E OV U map: " + percent1(c.diagonalTop) + ". Near 0 the head moves tokens without copying them; below 0 it tends to lower them.";
}

std::string oneHeadConventions(bool rope) {
  std::string s = "Read from the weights alone: the norms' gains folded into W_q, W_k, W_v and U, their centring "
                  "and the biases left out";
  if (rope) s += "; RoPE: QK is the content part of the score only (the rotation by position is left out)";
  return s + ".";
}

std::string oneHeadMatrixText(const OneHeadCircuits& c, int distinctTokens, int matrix) {
  const std::string name = headName(c.layer, c.head);
  const bool hasCopying = c.layer >= 0 && c.head >= 0 && c.layer < c.layers && c.head < c.heads &&
                          c.copying.size() == static_cast<std::size_t>(c.layers) * static_cast<std::size_t>(c.heads);
  const std::string copying = hasCopying ? formatFixed(c.copyingAt(c.layer, c.head), 3) : std::string("n/a");
  const int n = static_cast<int>(c.tokenIds.size());
  // A long text has more distinct tokens than the axes hold: say which of them are shown.
  const std::string which = distinctTokens > n ? "the first " + std::to_string(n) + " of the text's " +
                                                       std::to_string(distinctTokens) + " distinct tokens"
                                                 : "the text's " + std::to_string(n) + " distinct token" + (n == 1 ? "" : "s");
  const std::string over = "over " + which + " (of V = " + withThousands(c.vocab) + "), first occurrence first";
  switch (matrix) {
    case 0:
      return name + ": ||QK||_F = " + formatFixed(static_cast<double>(c.qk.norm()), 3) +
             ". A query x_t scores key x_j with x_t QK x_jᵀ (before the 1/sqrt(d_k) scale); red: that direction "
             "of the query looks for that direction of the key.";
    case 1:
      return name + ": ||OV||_F = " + formatFixed(static_cast<double>(c.ov.norm()), 3) +
             ". What the head writes to the residual stream for an attended x_j is x_j OV; copying score " + copying +
             " (E OV U's eigenvalues over the whole vocabulary: sum / sum of moduli).";
    case 2:
      return name + ": E QK Eᵀ " + over +
             ". Row: the query's token, column: the key's token; red: that query token looks at that key token more "
             "(content only: no position)." + kDirectPath;
    case 4: {
      const int p = static_cast<int>(c.qkPositions.rows());
      return name + ": P QK Pᵀ over the text's positions 0 … " + std::to_string(std::max(0, p - 1)) +
             " (P: the learned position table). Row: the query's position, column: the key's; red: that position looks "
             "at that position more, from the positions alone (the token part is E QK Eᵀ; the cross terms are left out). "
             "Above the diagonal: keys a causal query never sees. " + (p > 1 ? "Here " + positionMapWords(c.qkPositions) + "." : "");
    }
    default:
      return name + ": E OV U " + over + ". Row: the attended token, column: the predicted token; red: attending to "
             "the row's token raises that token's logit. A red diagonal is copying: " + percent1(c.diagonalTop) +
             " of these tokens raise their own logit most (copying score " + copying + ")." + kDirectPath;
  }
}

std::string compositionCellText(const OneHeadCircuits& c, const Composition& p, char kind) {
  return headName(p.fromLayer, p.fromHead) + " → " + headName(p.toLayer, p.toHead) + ": " +
         std::string(1, kind) + " " + formatFixed(compositionScore(p, kind), 3) + " (random baseline " +
         formatFixed(c.baseline, 3) + ")";
}

std::string copyingCellText(const OneHeadCircuits& c, int layer, int head) {
  return headName(layer, head) + ": copying score " + formatFixed(c.copyingAt(layer, head), 3);
}

}  // namespace mhascope::analysis
