// What the computing is doing, as the window shows it: written only by the compute scheduler
// (shell/compute_scheduler.cpp) from its worker, read by the panels (the progress line, a big
// job's first picture) and by the loop's pacing. The worker (shell/compute_worker.hpp) makes
// the first picture and the progress these types describe; they live here so that state/ needs
// nothing from shell/.
#pragma once

#include <cstdint>
#include <memory>

#include "attention/trace.hpp"

namespace mhascope::app {

// A big job's first picture: the viewed head of the new configuration alone, as a trace of that
// one head (B = 1, h = 1; attentionHead), equal bit for bit to the head the whole trace will hold.
struct FirstHead {
  std::uint64_t requestId = 0;
  StageId stage = StageId::Weights;
  int batch = 0, head = 0;  // where it sits in the whole trace
  int batches = 0, heads = 0;
  Trace trace;    // the one head
  Slice2D slice;  // sliceStage(trace, stage, 0, 0): points into `trace`
};

// What the worker is doing, for the window's progress line.
enum class ComputePhase { Idle, Preparing, FirstHead, Forward };
struct ComputeProgress {
  ComputePhase phase = ComputePhase::Idle;
  double seconds = 0.0;          // since the job started
  double expectedSeconds = 0.0;  // from the last job's speed (FLOPs per second); 0 = unknown
  // A model folder's layer: the layers before it run first (Preparing); layers = 0 otherwise.
  int layersDone = 0, layers = 0;
};

struct ComputeStatus {
  bool computing = false;           // a worker job is queued or running
  // A big job's first picture: the viewed head of the configuration being computed, which the
  // heatmap shows until the whole trace comes (then it is dropped).
  std::shared_ptr<const FirstHead> firstHead;
  bool lessonComputing = false;     // a recomputing lesson is queued or running on its thread
  std::uint64_t lessonJobs = 0;     // lessons handed to that thread since the window opened
  ComputeProgress progress;         // the worker's phase and time, for the progress line
  double lastComputeMs = 0.0;
  int lastComputeThreads = 1;       // threads the last forward used (computeThreads())
  bool lastComputeOnWorker = false;
};

}  // namespace mhascope::app
