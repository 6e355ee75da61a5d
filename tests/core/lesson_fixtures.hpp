// What the lesson tests share: a model built from a config (failing the test if it cannot be),
// a small configuration of a given size, the trace of a model's forward, and a quiz question
// found by how it starts; has(text, part).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "lessons/quiz.hpp"

namespace mhascope::lesson_fixtures {

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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

// The quiz question that starts with `start`, or null.
inline const QuizQuestion* findQuestion(const std::vector<QuizQuestion>& quiz, const std::string& start) {
  for (const auto& q : quiz)
    if (q.question.rfind(start, 0) == 0) return &q;
  return nullptr;
}

// Weight A[b, h, q, k] of a trace.
inline float weightAt(const Trace& t, int b, int h, int q, int k) {
  return t.tensor(StageId::Weights)
      .data[static_cast<std::size_t>(((b * t.heads + h) * t.tq + q) * t.tk + k)];
}

}  // namespace mhascope::lesson_fixtures
