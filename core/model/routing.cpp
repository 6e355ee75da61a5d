// A mixture's router (forward.hpp routeTokens): each token's top-k experts from the router's
// logits, by the family's rule — softmax or sigmoid scores, a choice-only bias, the groups a token
// may draw from, renormalised or scaled weights.
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/forward.hpp"

namespace mhascope::model {

namespace {
// The k largest of v, in descending order; an equal value goes to the lower index first.
void topK(const std::vector<float>& v, int k, std::vector<int>& order) {
  order.resize(v.size());
  for (std::size_t e = 0; e < v.size(); ++e) order[e] = static_cast<int>(e);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    const float va = v[static_cast<std::size_t>(a)], vb = v[static_cast<std::size_t>(b)];
    return va > vb || (va == vb && a < b);
  });
  order.resize(static_cast<std::size_t>(k));
}

// softmax over v in place, in float as torch computes it (the maximum subtracted only for stability).
void softmaxInPlace(std::vector<float>& v) {
  const float top = *std::max_element(v.begin(), v.end());
  float sum = 0.0f;
  for (float& x : v) sum += x = std::exp(x - top);
  for (float& x : v) x /= sum;
}

// The choice c limited to the rule's best groups: the other groups' experts get 0 (as the published routers mask
// them), so they are chosen only if every kept score is below 0.
void limitToGroups(const RouterRule& rule, std::vector<float>& c) {
  const int G = rule.groupCount, per = static_cast<int>(c.size()) / G;
  std::vector<float> groupScore(static_cast<std::size_t>(G));
  std::vector<float> group;
  std::vector<int> best;
  for (int g = 0; g < G; ++g) {
    group.assign(c.begin() + g * per, c.begin() + (g + 1) * per);
    topK(group, rule.groups == ExpertGroups::TopTwoSum ? std::min(2, per) : 1, best);
    float score = 0.0f;
    for (int i : best) score += group[static_cast<std::size_t>(i)];
    groupScore[static_cast<std::size_t>(g)] = score;
  }
  std::vector<int> kept;
  topK(groupScore, rule.groupsKept, kept);
  for (int g = 0; g < G; ++g) {
    if (std::find(kept.begin(), kept.end(), g) != kept.end()) continue;
    std::fill(c.begin() + g * per, c.begin() + (g + 1) * per, 0.0f);
  }
}
}  // namespace

LayerRouting routeTokens(const RouterRule& rule, const RowMatrix& z /*(T, E)*/, int k, const RowVector* choiceBias) {
  const Eigen::Index T = z.rows(), E = z.cols();
  LayerRouting r;
  r.k = k;
  r.experts.resize(static_cast<std::size_t>(T * k));
  r.weights.resize(static_cast<std::size_t>(T * k));
  std::vector<float> s(static_cast<std::size_t>(E)), c, w(static_cast<std::size_t>(k));
  std::vector<int> chosen, order;
  for (Eigen::Index t = 0; t < T; ++t) {
    for (Eigen::Index e = 0; e < E; ++e) s[static_cast<std::size_t>(e)] = z(t, e);
    switch (rule.scores) {
      case RouterScores::Softmax: softmaxInPlace(s); break;
      case RouterScores::Sigmoid:
        for (float& x : s) x = 1.0f / (1.0f + std::exp(-x));
        break;
      case RouterScores::Logits: break;
    }
    c = s;
    if (choiceBias) {
      for (Eigen::Index e = 0; e < E; ++e) c[static_cast<std::size_t>(e)] += (*choiceBias)(e);
    }
    if (rule.groups != ExpertGroups::None) limitToGroups(rule, c);
    topK(c, k, chosen);
    for (int j = 0; j < k; ++j) w[static_cast<std::size_t>(j)] = s[static_cast<std::size_t>(chosen[static_cast<std::size_t>(j)])];
    if (rule.softmaxOfChosen) softmaxInPlace(w);
    if (rule.renormalise) {
      float sum = 0.0f;
      for (float x : w) sum += x;
      sum += static_cast<float>(rule.renormaliseEpsilon);
      for (float& x : w) x /= sum;
    }
    for (float& x : w) x = static_cast<float>(x * rule.scale);
    topK(w, k, order);  // in descending weight (a bias for the choice may have chosen in another order)
    for (int j = 0; j < k; ++j) {
      const auto at = static_cast<std::size_t>(t * k + j);
      const auto from = static_cast<std::size_t>(order[static_cast<std::size_t>(j)]);
      r.experts[at] = chosen[from];
      r.weights[at] = w[from];
    }
  }
  return r;
}

}  // namespace mhascope::model
