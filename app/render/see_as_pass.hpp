// The "see as" preview of the whole window: one pass over the framebuffer after ImGui has drawn
// the frame (before a screenshot reads it and before the swap), so every panel, lesson, legend
// and popup is seen the same way — no panel knows about it. A fragment shader applies the same
// matrix in linear RGB as core/color/see_as.cpp (seeAsMatrix), which the exporters use.
#pragma once

#include "color/see_as.hpp"

namespace mhascope::app {

class SeeAsPass {
 public:
  SeeAsPass() = default;
  ~SeeAsPass();
  SeeAsPass(const SeeAsPass&) = delete;
  SeeAsPass& operator=(const SeeAsPass&) = delete;

  // Replaces the back buffer's `width` x `height` pixels by how `kind` sees them; Normal does
  // nothing (no GL call at all). False, with the GL objects left unmade, when the shader does
  // not compile (then the frame shows unchanged).
  bool apply(SeeAs kind, int width, int height);
  // Frees the GL objects; call while the context is current (before it goes).
  void release();

 private:
  bool create();
  unsigned program_ = 0, vao_ = 0, texture_ = 0;
  int matrixUniform_ = -1;
  int texW_ = 0, texH_ = 0;
  bool failed_ = false;
};

}  // namespace mhascope::app
