// A head's role by the one rule (head_roles.hpp).
#include "analysis/head_roles.hpp"

#include <algorithm>

#include "util/format.hpp"

namespace mhascope {
namespace {

bool copies(const RoleScores& s) { return s.copying && *s.copying >= kCopyingThreshold; }

std::string inductionText(const RoleScores& s) {
  if (!s.prefixMatching) return "prefix matching n/a: no token repeats";
  const double pm = *s.prefixMatching;
  const bool matches = pm >= kRoleThreshold;
  const std::string prefix = "prefix matching " + formatFixed(pm, 2);
  if (s.layer < 1) {
    return prefix + (s.copying ? ", copying " + formatFixed(*s.copying, 2) : std::string()) +
           "; layer 0: no earlier head to compose with — it cannot be an induction head";
  }
  if (!s.copying) {
    return matches ? prefix + ", copying not checked"
                   : prefix + "; copying not checked: prefix matching below " + formatFixed(kRoleThreshold, 2);
  }
  if (matches && copies(s)) return "induction " + formatFixed(pm, 2) + " copying " + formatFixed(*s.copying, 2);
  if (!copies(s)) return prefix + ", not copying (" + formatFixed(*s.copying, 2) + ")";
  return prefix + ", copying " + formatFixed(*s.copying, 2);  // copies, but attends elsewhere
}

std::string thresholdText(const char* name, double v) {
  return std::string(name) + " " + formatFixed(v, 2) + (v >= kRoleThreshold ? "" : ", below " + formatFixed(kRoleThreshold, 2));
}

}  // namespace

bool isInductionHead(const RoleScores& s) {
  return s.layer >= 1 && s.prefixMatching && *s.prefixMatching >= kRoleThreshold && copies(s);
}

bool inductionNeedsCopying(int layer, std::optional<double> prefixMatching) {
  return layer >= 1 && prefixMatching && *prefixMatching >= kRoleThreshold;
}

RoleVerdict roleVerdict(const RoleScores& s, RuleRole r) {
  RoleVerdict v;
  switch (r) {
    case RuleRole::PreviousToken:
      v.score = std::max(s.prevToken, s.prevTokenNew);
      v.passes = v.score >= kRoleThreshold;
      // The plain score is the one the grid shows: the first-occurrence split is named beside it when
      // it is what passes or is higher, never written as the plain score.
      if (v.passes && s.prevToken < kRoleThreshold) {
        v.text = "previous-token at first occurrences " + formatFixed(s.prevTokenNew, 2);
      } else if (s.prevTokenNew > s.prevToken) {
        v.text = "previous-token " + formatFixed(s.prevToken, 2) + " (at first occurrences " + formatFixed(s.prevTokenNew, 2) + ")" +
                 (v.passes ? "" : ", below " + formatFixed(kRoleThreshold, 2));
      } else {
        v.text = thresholdText("previous-token", s.prevToken);
      }
      break;
    case RuleRole::Induction:
      v.measured = s.prefixMatching.has_value();
      v.score = s.prefixMatching.value_or(0.0);
      v.passes = isInductionHead(s);
      v.text = inductionText(s);
      break;
    case RuleRole::Self:
      v.score = s.self;
      v.passes = v.score >= kRoleThreshold;
      v.text = thresholdText("self", s.self);
      break;
    case RuleRole::FirstToken:
      v.score = s.firstToken;
      v.passes = v.score >= kRoleThreshold;
      v.text = thresholdText("first-token", s.firstToken);
      break;
  }
  return v;
}

std::string roleOf(const RoleScores& s) {
  const RuleRole order[] = {RuleRole::PreviousToken, RuleRole::Induction, RuleRole::Self, RuleRole::FirstToken};
  RoleVerdict best;
  best.score = -1.0;
  for (RuleRole r : order) {
    RoleVerdict v = roleVerdict(s, r);
    if (v.measured && v.score > best.score) best = std::move(v);
  }
  if (best.score < kRoleThreshold) return "diffuse (entropy " + formatFixed(s.entropy, 2) + ")";
  return best.text;
}

std::string inductionRuleText() {
  return "prefix matching ≥ " + formatFixed(kRoleThreshold, 2) + " and copying ≥ " + formatFixed(kCopyingThreshold, 2) +
         ", in layer 1 or later";
}

}  // namespace mhascope
