// Where every picture the window textures sits in the texture cache's key space, in one table so
// that no two kinds of picture share a key. A key (render/texture_cache.hpp) names a picture by
//   traceSerial  a namespace in the top bits (one per kind of source below) | that source's counter
//                (every counter stays below 2^56), and
//   stage        a slot: a stage of the trace (its StageId, < kWeightSlot), or a slot base below
//                plus an index within it.
#pragma once

#include <cstdint>

namespace mhascope::app {

// Namespaces of TextureKey::traceSerial.
inline constexpr std::uint64_t kTraceSpace = 0;                      // ShownResult::traceSerial
inline constexpr std::uint64_t kFirstHeadSpace = 1ull << 63;         // a big job's first picture: | its request id
inline constexpr std::uint64_t kCompareBSpace = 1ull << 62;          // the Compare tab's side B: | its trace serial
inline constexpr std::uint64_t kCompareDifferenceSpace = 1ull << 61; // B − A: | A's serial << 24 | B's serial
inline constexpr std::uint64_t kModelAtlasSpace = 1ull << 60;        // the Model tab's grid: | its result serial
inline constexpr std::uint64_t kModelCircuitsSpace = 1ull << 59;     // a model folder's circuits: | result serial
inline constexpr std::uint64_t kTrainPictureSpace = 1ull << 58;      // the Train mode's shown step: | its counter
inline constexpr std::uint64_t kCheckpointCircuitsSpace = 1ull << 57; // a checkpoint's circuits: | result serial
inline constexpr std::uint64_t kExperimentSpace = 1ull << 56;        // the Experiments tab's grids: | result serial

// Slots (TextureKey::stage) that are not a stage: base + index.
inline constexpr int kWeightSlot = 2000;      // + WeightId
inline constexpr int kTrainGridSlot = 2500;   // + layer (TextureKey::head: the head)
inline constexpr int kModelAtlasSlot = 2600;  // the one picture of every head's thumbnail
// Each circuits view (its own serial counter) + a circuits picture below.
inline constexpr int kTrainCircuitsSlot = 3000;  // the Train mode's Circuits panel
inline constexpr int kTabCircuitsSlot = 3100;    // the pipeline's Circuits tab on a checkpoint
inline constexpr int kModelCircuitsSlot = 3200;  // the Circuits tab on a model folder's layer
inline constexpr int kPracticeSlot = 3300;        // the Practice mode: + 0 yours, 1 expected, 2 difference
inline constexpr int kExperimentSlot = 3400;      // the Experiments tab: + 0 patching, 1 attribution per head
// The lesson pictures, last: + the lesson matrix's textureTag (each lesson's tags its own, < 2^30).
inline constexpr int kLessonSlot = 1 << 30;

// The pictures of a circuits view (the Train mode's, the Circuits tab's, a model folder's layer's).
inline constexpr int kCircuitsMatrix = 0;      // + the matrix shown (QK, OV, …)
inline constexpr int kCircuitsReads = 10;      // + the composition kind (Q, K, V)
inline constexpr int kCircuitsReaders = 13;    // + the composition kind
inline constexpr int kCircuitsCopying = 20;    // every head's copying score
inline constexpr int kCircuitsRawWeights = 30; // the last layer's raw attention beside the rollout
inline constexpr int kCircuitsRollout = 31;
inline constexpr int kCircuitsVirtual = 40;   // a picked pair's virtual head (token-space OV)

}  // namespace mhascope::app
