// The engine's speed options change no result: the GEMM dispatch (Eigen or OpenBLAS,
// kernels/gemm.hpp) gives the same products within float rounding for every transpose/accumulate
// case and the whole forward agrees between the backends; the trainer's partial recording gives
// the full recording's exact bits on the stages it keeps; parallelFor runs every index once and
// passes exceptions on. (The threaded forward's bits: tests/threads/.)
#include <gtest/gtest.h>

#include <string>

#include <algorithm>
#include <cmath>
#include <limits>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "attention/engine.hpp"
#include "kernels/gemm.hpp"
#include "kernels/head_kernels.hpp"
#include "attention/model.hpp"
#include "test_model.hpp"
#include "../check_tensor.hpp"
#include "../kernels/kernel_variants.hpp"

namespace mhascope {
namespace {

using mhascope::testing::checkTensor;

// Restores the measured choice's backend after a test pins one.
struct PinnedBackend {
  GemmBackend before = gemmChoice().backend;
  ~PinnedBackend() { setGemmBackend(before); }
};

// Plain triple loop in double: the reference for both backends.
std::vector<double> referenceGemm(bool ta, bool tb, int M, int N, int K, const std::vector<float>& A, int lda,
                                  const std::vector<float>& B, int ldb, float beta, const std::vector<float>& C0,
                                  int ldc) {
  std::vector<double> C(C0.begin(), C0.end());
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) {
        const double a = ta ? A[static_cast<std::size_t>(k * lda + i)] : A[static_cast<std::size_t>(i * lda + k)];
        const double b = tb ? B[static_cast<std::size_t>(j * ldb + k)] : B[static_cast<std::size_t>(k * ldb + j)];
        s += a * b;
      }
      double& c = C[static_cast<std::size_t>(i * ldc + j)];
      c = s + (beta == 0.0f ? 0.0 : c);
    }
  }
  return C;
}

TEST(Gemm, EveryBackendMatchesTheReferenceForEveryLayout) {
  std::vector<GemmBackend> backends{GemmBackend::Eigen};
  if (openBlasAvailable()) backends.push_back(GemmBackend::OpenBlas);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 64, 64}, {130, 70, 200}};
  for (GemmBackend be : backends) {
    for (const auto& s : sizes) {
      const int M = s[0], N = s[1], K = s[2];
      for (int ta = 0; ta < 2; ++ta) {
        for (int tb = 0; tb < 2; ++tb) {
          for (float beta : {0.0f, 1.0f}) {
            // Leading dimensions wider than the matrices: sub-blocks of bigger arrays, as the engine uses.
            const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
            std::vector<float> A(static_cast<std::size_t>((ta ? K : M) * lda)), B(static_cast<std::size_t>((tb ? N : K) * ldb)),
                C(static_cast<std::size_t>(M * ldc));
            for (float& x : A) x = u(rng);
            for (float& x : B) x = u(rng);
            for (float& x : C) x = u(rng);
            const auto ref = referenceGemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
            sgemmWith(be, ta, tb, M, N, K, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
            EXPECT_TRUE(checkTensor(gemmName(be) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                                        std::to_string(K) + " ta" + std::to_string(ta) + " tb" + std::to_string(tb) +
                                        " beta" + std::to_string(beta),
                                    C.data(), ref.data(), C.size(), 1e-5 * K, 1e-5));
          }
        }
      }
    }
  }
}

// The backend comes from MHASCOPE_GEMM or is Eigen, never from a timing: a choice measured at
// start-up flipped between processes on a busy machine, and the same command gave other bits.
TEST(Gemm, TheChoiceIsNamedNeverTimedAndUsable) {
  const GemmChoice& g = gemmChoice();
  const char* env = std::getenv("MHASCOPE_GEMM");
  if (!env) {
    EXPECT_EQ(g.how, "the default");
    EXPECT_EQ(g.backend, GemmBackend::Eigen);
  }
  EXPECT_FALSE(gemmName(GemmBackend::Eigen).empty());
  const GemmSpeeds sp = measureGemmBackends();  // shown by bench, changes nothing
  EXPECT_GT(sp.eigenGflops, 0.0);
  EXPECT_EQ(sp.openblasGflops > 0.0, openBlasAvailable());
  EXPECT_EQ(gemmChoice().how, g.how);
  EXPECT_EQ(gemmChoice().backend, g.backend);
  if (!openBlasAvailable()) {
    PinnedBackend keep;
    EXPECT_FALSE(setGemmBackend(GemmBackend::OpenBlas));  // refused, nothing changed
    EXPECT_EQ(gemmChoice().backend, GemmBackend::Eigen);
  }
}

using mhascope::testing::testModel;

TEST(Gemm, TheForwardAgreesOnBothBackends) {
  if (!openBlasAvailable()) GTEST_SKIP() << "no OpenBLAS on this machine: only Eigen runs";
  PinnedBackend keep;
  const Model m = testModel(96, 64, 4, 2, MaskKind::Causal);
  Trace te, to;
  ASSERT_TRUE(setGemmBackend(GemmBackend::Eigen));
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, te).ok());
  ASSERT_TRUE(setGemmBackend(GemmBackend::OpenBlas));
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, to).ok());
  for (int i = 0; i < kStageCount; ++i) {
    const Tensor& a = to.copyOf(static_cast<StageId>(i));
    const Tensor& b = te.copyOf(static_cast<StageId>(i));
    ASSERT_EQ(a.shape, b.shape);
    EXPECT_TRUE(checkTensor(std::string(stageInfo(static_cast<StageId>(i)).name), a.ptr(), b.ptr(), a.data.size(), 1e-5, 1e-4));
  }
}

// The AVX-512 head kernels (kernels/head_kernels.hpp) against the general path the engine takes
// without them (sgemm + row kernels), the one a CPU without AVX-512 runs.
TEST(HeadKernels, TheForwardAgreesWithTheGeneralPath) {
  KeepHeadKernels keep;
  EXPECT_EQ(headKernelsEnabled(), headKernelsAvailable());  // on by default exactly when built in
  EXPECT_EQ(setHeadKernels(true), headKernelsAvailable());  // never on without them
  for (MaskKind mask : {MaskKind::None, MaskKind::Causal}) {
    for (int dModel : {128, 96}) {  // d_k 64 (the compiled-in width) and 48
      const Model m = testModel(300, dModel, 2, 2, mask);
      Trace general, kernels;
      ASSERT_TRUE(setHeadKernels(false));
      ASSERT_TRUE(forward(m.inputs, m.weights, m.options, general).ok());
      setHeadKernels(headKernelsAvailable());
      ASSERT_TRUE(forward(m.inputs, m.weights, m.options, kernels).ok());
      for (int i = 0; i < kStageCount; ++i) {
        const Tensor& a = kernels.copyOf(static_cast<StageId>(i));
        const Tensor& b = general.copyOf(static_cast<StageId>(i));
        ASSERT_EQ(a.shape, b.shape);
        EXPECT_TRUE(checkTensor(std::string(stageInfo(static_cast<StageId>(i)).name), a.ptr(), b.ptr(),
                                         a.data.size(), 1e-5, 1e-4));
      }
    }
  }
}

// The attention runs in blocks of 128 query rows shared out among the threads: at a T_q that is no
// multiple of the block, every per-head stage still equals the whole-matrix products, computed
// here in double from the recorded heads.
TEST(BlockedAttention, EveryPerHeadStageEqualsTheWholeMatrixProducts) {
  for (MaskKind mask : {MaskKind::None, MaskKind::Causal}) {
    const Model m = testModel(611, 16, 2, 2, mask);  // 5 blocks of 128 query rows, the last of 99
    Trace t;
    ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
    const std::int64_t T = 611, dk = 8;
    for (std::int64_t bh = 0; bh < 4; ++bh) {
      const float* q = t.tensor(StageId::QHeads).ptr() + bh * T * dk;
      const float* k = t.tensor(StageId::KHeads).ptr() + bh * T * dk;
      const float* v = t.tensor(StageId::VHeads).ptr() + bh * T * dk;
      auto at = [&](StageId id, std::int64_t i, std::int64_t j) {
        return t.cell(id, (bh * T + i) * T + j);
      };
      for (std::int64_t i = 0; i < T; i += 61) {
        std::vector<double> w(static_cast<std::size_t>(T));
        double mx = -1e300, sum = 0;
        for (std::int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (std::int64_t c = 0; c < dk; ++c) s += double(q[i * dk + c]) * k[j * dk + c];
          ASSERT_NEAR(at(StageId::Scores, i, j), s, 1e-4 + 1e-5 * std::abs(s)) << bh << " " << i << " " << j;
          EXPECT_EQ(at(StageId::ScaledScores, i, j), at(StageId::Scores, i, j) * t.scaleFactor);
          const bool blocked = mask == MaskKind::Causal && j > i;
          if (blocked) EXPECT_EQ(at(StageId::MaskedScores, i, j), -std::numeric_limits<float>::infinity());
          else EXPECT_EQ(at(StageId::MaskedScores, i, j), at(StageId::ScaledScores, i, j));
          w[static_cast<std::size_t>(j)] = blocked ? -1e300 : double(at(StageId::ScaledScores, i, j));
          mx = std::max(mx, w[static_cast<std::size_t>(j)]);
        }
        for (double& x : w) sum += (x = x == -1e300 ? 0.0 : std::exp(x - mx));
        for (std::int64_t c = 0; c < dk; ++c) {
          double o = 0;
          for (std::int64_t j = 0; j < T; ++j) {
            const double wij = w[static_cast<std::size_t>(j)] / sum;
            if (c == 0) ASSERT_NEAR(at(StageId::Weights, i, j), wij, 1e-6 + 1e-5 * wij) << bh << " " << i << " " << j;
            o += wij * v[j * dk + c];
          }
          EXPECT_NEAR(t.tensor(StageId::HeadOutputs).ptr()[(bh * T + i) * dk + c], o, 1e-5 + 1e-4 * std::abs(o));
        }
      }
    }
  }
}

bool sameBits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end(),
                                          [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
}

// A recompute into the same trace skips rewriting inputs that hold the same bits: changed ones
// must still be written (one bit is enough); the weights are the ones of this pass too.
TEST(ReusedTrace, RecordsChangedInputsAndWeights) {
  Model m = testModel(20, 16, 2, 1, MaskKind::None);
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_EQ(t.weight(WeightId::Wo).data[5], m.weights.wo.data()[5]);
  m.weights.wo.data()[5] = std::nextafter(m.weights.wo.data()[5], 1.0f);
  m.inputs.query.ptr()[7] = -m.inputs.query.ptr()[7] + 0.25f;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_EQ(t.weight(WeightId::Wo).data[5], m.weights.wo.data()[5]);
  EXPECT_EQ(t.tensor(StageId::Query).ptr()[7], m.inputs.query.ptr()[7]);
  Trace fresh;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, fresh).ok());
  for (int i = 0; i < kStageCount; ++i) {
    EXPECT_TRUE(sameBits(t.copyOf(static_cast<StageId>(i)), fresh.copyOf(static_cast<StageId>(i))))
        << stageInfo(static_cast<StageId>(i)).name;
  }
}


TEST(PartialRecording, KeepsTheFullRecordingsBitsOnItsStagesAndEmptiesTheRest) {
  for (MaskKind mask : {MaskKind::None, MaskKind::Causal}) {
    for (int threads : {1, 2}) {
      const Model m = testModel(150, 32, 4, 2, mask);
      AttentionOptions full = m.options, part = m.options;
      full.threads = part.threads = threads;
      part.recordEveryStage = false;
      Trace tf, tp;
      ASSERT_TRUE(forward(m.inputs, m.weights, full, tf).ok());
      ASSERT_TRUE(forward(m.inputs, m.weights, part, tp).ok());
      for (StageId id : {StageId::Query, StageId::QProj, StageId::KProj, StageId::VProj, StageId::QHeads,
                         StageId::KHeads, StageId::VHeads, StageId::Weights, StageId::Concat, StageId::Output}) {
        EXPECT_TRUE(sameBits(tp.copyOf(id), tf.copyOf(id))) << stageInfo(id).name;
      }
      for (StageId id : {StageId::Key, StageId::Value, StageId::Scores, StageId::ScaledScores, StageId::MaskedScores,
                         StageId::HeadOutputs}) {
        EXPECT_TRUE(tp.copyOf(id).data.empty()) << stageInfo(id).name;
      }
      EXPECT_EQ(tp.fullyMasked, tf.fullyMasked);
      // Back to full recording on the same trace: every stage is there again.
      ASSERT_TRUE(forward(m.inputs, m.weights, full, tp).ok());
      for (int i = 0; i < kStageCount; ++i) {
        EXPECT_TRUE(sameBits(tp.copyOf(static_cast<StageId>(i)), tf.copyOf(static_cast<StageId>(i))));
      }
    }
  }
}

// Every recorded table starts on a 64-byte line (Tensor's FloatBuffer), small or big, so the
// attention kernel streams the scores as whole lines and no vector load of a row start is split.
TEST(BigTraces, EveryTableStartsOnACacheLine) {
  for (const std::int64_t T : {5, 300, 1024}) {
    const Model m = testModel(T, 64, 4, 1, MaskKind::Causal);
    Trace t;
    ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
    for (const auto& stage : t.stages) {
      if (stage.tensor.data.empty()) continue;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(stage.tensor.data.data()) % 64, 0u)
          << stageInfo(stage.id).name << " at T = " << T;
    }
  }
}

TEST(ParallelFor, RunsEveryIndexOnceAndPassesExceptionsOn) {
  for (int threads : {1, 2, 3, 8}) {
    for (std::int64_t n : {0, 1, 2, 7, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      parallelFor(threads, n, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)]++; });
      for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
    EXPECT_THROW(parallelFor(threads, 10,
                             [](std::int64_t i) {
                               if (i == 9) throw std::runtime_error("late");
                             }),
                 std::runtime_error);
  }
}

}  // namespace
}  // namespace mhascope
