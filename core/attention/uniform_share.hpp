// The chance level of every "share of attention on key X" score: a query that spreads its weight
// evenly over the keys it may see gives each of them 1 / (keys seen). A score read without it
// misleads: under a causal mask query 1 sees two keys, so even a head that ignores its scores puts
// half of that row on the previous token. The Windows lesson reads the first key's share against
// it, the head role scores (analysis/head_scores.hpp) their chance level.
#pragma once

namespace mhascope {

// 0 when the query sees no key (a fully masked row has no share to give).
inline double uniformShare(int keysSeen) { return keysSeen > 0 ? 1.0 / static_cast<double>(keysSeen) : 0.0; }

}  // namespace mhascope
