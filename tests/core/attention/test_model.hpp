// A text-built model of the given sizes for the engine's path tests (the threaded forward's too,
// in the threaded code's binary): the same two sentences every time, batch items cut or filled
// to `tokens`.
#pragma once

#include <gtest/gtest.h>

#include "attention/model.hpp"

namespace mhascope::testing {

inline Model testModel(int tokens, int dModel, int heads, int batch, MaskKind mask) {
  ModelConfig c;
  c.tokens = tokens;
  c.dModel = dModel;
  c.heads = heads;
  c.batch = batch;
  c.mask = mask;
  c.text = "the cat sat on the mat | a dog ran far away";
  auto m = buildModel(c);
  EXPECT_TRUE(m.ok());
  return *m;
}

}  // namespace mhascope::testing
