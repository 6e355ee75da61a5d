// What the lesson tests share: a model built from a config (failing the test if it cannot be),
// a small configuration of a given size, and the trace of a model's forward.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "attention/engine.hpp"
#include "attention/model.hpp"

namespace mhascope::lesson_fixtures {

inline Model buildOrDie(const ModelConfig& cfg) {
  auto m = buildModel(cfg);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return std::move(m).value();
}

inline ModelConfig sized(int dModel, int heads, const std::string& text = "The cat sat on the mat today") {
  ModelConfig cfg;
  cfg.text = text;
  cfg.dModel = dModel;
  cfg.heads = heads;
  cfg.seed = 5;
  return cfg;
}

inline Trace traceOf(const Model& m) {
  Trace t;
  auto s = forward(m.inputs, m.weights, m.options, t);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return t;
}

}  // namespace mhascope::lesson_fixtures
