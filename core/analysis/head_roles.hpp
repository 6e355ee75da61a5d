// A head's role in words, by one rule for both sources of heads: the Train mode's probe
// (core/train/probes) and a model folder's view (core/model/model_view). The scores are those of
// head_scores.hpp plus copying, which needs the model's weights and is measured by each source:
//   copying   over the queries t with an earlier copy of their token (TokenRepeats::hasEarlierCopy),
//             the share whose head output read straight into the logits ranks first the token of
//             the key the head attends to most (k* = argmax_k a[t][k], the first maximum): the
//             head's own term of the attention output o_t = (sum_k a[t][k] v_k) W_o^i (values with
//             their bias, no output bias), through the final norm's centring (LayerNorm only) and
//             gain — no 1/sigma, which scales every logit alike, and no bias — then the
//             unembedding over the whole vocabulary. Whether what the head moves is the attended
//             token itself; chance is about 1/V.
#pragma once

#include <optional>
#include <string>

namespace mhascope {

// A head has a role when one pattern takes at least half of its attention — as much weight on the
// pattern's keys as on all other keys together. A head attending evenly over its causal keys
// scores 1/(t+1) on previous-token and (copies of its token)/(t+1) on prefix matching, far below.
// The same threshold applies to every role.
inline constexpr double kRoleThreshold = 0.5;
// An induction head also copies: its output ranks the attended token first for at least half of
// the queries (chance: about 1/V).
inline constexpr double kCopyingThreshold = 0.5;

// What the rule reads of one head (head_scores.hpp roleScoresOf, train/probes.hpp roleScoresOf).
struct RoleScores {
  int layer = 0;
  double prevToken = 0, prevTokenNew = 0;  // prevTokenNew: over queries whose token is a first occurrence
  double self = 0, firstToken = 0, entropy = 0;
  std::optional<double> prefixMatching;  // none: no query has an earlier copy of its token
  std::optional<double> copying;         // none: not measured
};

// The induction rule: layer 1 or later (a layer-0 head reads only the embeddings, so it has no
// earlier head's output to compose with and cannot find "the token after the earlier copy" by
// content), prefix matching >= kRoleThreshold and copying >= kCopyingThreshold.
bool isInductionHead(const RoleScores& s);
// Whether the rule needs this head's copying: only a head in layer 1 or later whose prefix
// matching passes can be an induction head, so a source may measure copying for those alone.
bool inductionNeedsCopying(int layer, std::optional<double> prefixMatching);

// The roles that have a rule; the entropy has none (it ranks, it does not decide).
enum class RuleRole { PreviousToken, Induction, Self, FirstToken };

struct RoleVerdict {
  bool passes = false;
  double score = 0;  // what the role is ranked by (previous-token: the larger of prevToken and prevTokenNew)
  bool measured = true;  // false: the score is undefined (prefix matching with no repeated token)
  std::string text;  // the verdict in words, with the numbers it rests on
};
// One role's verdict and its words:
//   previous-token  "previous-token 0.97", "previous-token 0.56 (at first occurrences 0.89)" (both
//                   pass, the split higher), "previous-token at first occurrences 0.96" (only
//                   prevTokenNew passes), "previous-token 0.12, below 0.50", "previous-token 0.12 (at first
//                   occurrences 0.30), below 0.50"
//   induction       "induction 0.88 copying 0.93"; "prefix matching 0.88, not copying (0.10)";
//                   "prefix matching 0.19, not copying (0.10)"; "prefix matching 0.19, copying 0.93";
//                   "prefix matching 0.19; copying not checked: prefix matching below 0.50";
//                   "prefix matching 0.88, copying 0.93; layer 0: no earlier head to compose with — it
//                   cannot be an induction head" (copying left out when not measured);
//                   "prefix matching n/a: no token repeats"
//   self, first-token  "self 0.91", "first-token 0.12, below 0.50"
RoleVerdict roleVerdict(const RoleScores& s, RuleRole r);
// The head's role: the verdict of the passing role with the highest score (previous-token,
// induction — passing prefix matching is enough to be named, with why it is not an induction head
// when it is not — self, first-token, ties to the earlier); "diffuse (entropy 1.20)" when none
// passes.
std::string roleOf(const RoleScores& s);

// The rule in one line, as the views state it: "prefix matching ≥ 0.50 and copying ≥ 0.50, in
// layer 1 or later".
std::string inductionRuleText();

}  // namespace mhascope
