// The Model tab's state: every layer and head of a model folder on one probe (the user's text or
// repeated random tokens), as core/model/model_view.hpp computes it — per-head role scores, a
// thumbnail of each head's attention, the top-5 predictions per position and the logit lens.
// Computing it takes a whole forward pass, so it runs on a worker of its own
// (shell/model_view_compute.*): this struct holds what the panels read — the last good result and
// what it was made from, the running job's progress and cancel flag, the last error — and what the
// user picked (probe, head, the role the grid is coloured by). The previous result stays on screen
// while a new one is computed and when it fails.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mhascope::model {
struct ModelView;  // core/model/model_view.hpp
}

namespace mhascope::app {

// What the model is run on: the document's text through the model's tokenizer, or the
// literature's induction probe — a random token sequence repeated once — so induction heads show
// even when the text has no repeats.
enum class ModelProbe { Text, RepeatedRandom };
inline constexpr int kMinProbeLength = 32;   // tokens in one half of the repeated sequence
inline constexpr int kMaxProbeLength = 256;

// The per-head score the grid is coloured by (core/attention/head_scores.hpp).
enum class HeadRole { PreviousToken, Induction, Sink, Entropy };
inline constexpr int kHeadRoleCount = 4;

// What a result is computed from; a new job is started when the wanted one differs from the
// result's (or the running job's).
struct ModelViewInputs {
  std::string folder;                 // the model folder (InputFiles::model)
  std::string text;                   // the document's text, verbatim (ModelProbe::Text)
  ModelProbe probe = ModelProbe::Text;
  int probeLength = 64;               // ModelProbe::RepeatedRandom: n, the sequence is 2n long
  std::uint64_t probeSeed = 1;        // ModelProbe::RepeatedRandom
  bool operator==(const ModelViewInputs& o) const {
    return folder == o.folder && text == o.text && probe == o.probe &&
           (probe == ModelProbe::Text || (probeLength == o.probeLength && probeSeed == o.probeSeed));
  }
  bool operator!=(const ModelViewInputs& o) const { return !(*this == o); }
};

// A running job's progress, shared with the worker (written there, read by the UI thread).
struct ModelViewJob {
  std::atomic<int> layersDone{0};
  std::atomic<int> layers{0};         // L, once the folder is read (0: still opening)
  std::atomic<bool> cancel{false};    // set by Cancel: the worker stops at the next layer
  double progress() const {
    const int total = layers.load();
    return total > 0 ? static_cast<double>(layersDone.load()) / total : 0.0;
  }
};

struct ModelViewState {
  // The last good result and what it was computed from (null until the first one arrives).
  std::shared_ptr<const model::ModelView> result;
  ModelViewInputs resultInputs;
  std::vector<int> resultIds;            // (T) the token ids the result was computed on
  std::vector<std::string> resultLabels; // (T) those tokens as text (leading space drawn visibly)
  std::uint64_t resultSerial = 0;        // ++ whenever `result` is replaced (texture cache key)

  // The job under way (null when none): its inputs, progress and cancel flag.
  std::shared_ptr<ModelViewJob> job;
  ModelViewInputs jobInputs;
  bool cancelled = false;                // the last job was cancelled (inputs unchanged: not rerun)

  // Why the last job failed ("" = it did not); the previous result stays.
  std::string error;

  // What the user picked.
  ModelProbe probe = ModelProbe::Text;
  int probeLength = 64;
  std::uint64_t probeSeed = 1;
  int layer = 0, head = 0;               // the selected head (clicked: opened in the pipeline)
  int hoverLayer = -1, hoverHead = -1;   // the head under the mouse last frame (-1: none)
  HeadRole colourBy = HeadRole::Induction;

  bool busy() const { return job != nullptr; }
  double progress() const { return job ? job->progress() : 0.0; }
  // Cancel the running job (the worker stops at its next layer; the previous result stays).
  void requestCancel() {
    if (job) job->cancel = true;
  }
};

}  // namespace mhascope::app
