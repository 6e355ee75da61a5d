// MXFP4 weights (gpt-oss's experts): <name>_blocks + <name>_scales unpack, low nibble first, to the values the
// gpt_oss_bf16 fixture folder stores as BF16 (scripts/gen_model_fixtures.py writes both from the same numbers:
// the BF16 folder's gate_up_proj (E, d, 2F) and down_proj (E, F, d) are the unpacked (E, rows, cols) transposed);
// a pair that is broken is refused naming the tensor and the problem.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <string>
#include <tuple>
#include <vector>

#include "io/file_io.hpp"
#include "io/mxfp4.hpp"
#include "model/weight_store.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

namespace fs = std::filesystem;

TEST(Mxfp4, TheTableAndAKnownByte) {
  // e2m1 from its definition: sign, exponent e (2 bits), mantissa m; e = 0 gives m / 2, else 2^(e-1) (1 + m/2).
  for (int n = 0; n < 16; ++n) {
    const int e = (n >> 1) & 3, m = n & 1;
    const float v = (n & 8 ? -1.0f : 1.0f) * (e == 0 ? m / 2.0f : static_cast<float>(1 << (e - 1)) * (1.0f + m / 2.0f));
    EXPECT_EQ(kFp4Values[static_cast<std::size_t>(n)], v) << n;
  }
  // 0x2F with scale 128 (2^1): the low nibble 0xF (-6) first, then 0x2 (1); the other bytes 0.
  std::uint8_t block[16] = {0x2F};
  const std::uint8_t scale = 128;
  float out[32];
  dequantiseMxfp4(block, &scale, 1, out);
  EXPECT_EQ(out[0], -12.0f);
  EXPECT_EQ(out[1], 2.0f);
  for (int i = 2; i < 32; ++i) EXPECT_EQ(out[i], 0.0f) << i;
}

TEST(Mxfp4, ExpertsEqualTheBf16FoldersValues) {
  auto packed = WeightStore::openFolder(kModels + "gpt_oss");
  auto plain = WeightStore::openFolder(kModels + "gpt_oss_bf16");
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  int checked = 0;
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* what : {"gate_up_proj", "down_proj"}) {
      const std::string name = "model.layers." + std::to_string(layer) + ".mlp.experts." + what;
      ASSERT_TRUE(packed->hasMxfp4(name)) << name;
      EXPECT_FALSE(plain->hasMxfp4(name)) << name;
      auto shape = packed->mxfp4Shape(name);
      ASSERT_TRUE(shape.ok()) << shape.error().message;
      const StoredTensor* ref = plain->find(name);
      ASSERT_NE(ref, nullptr) << name;
      ASSERT_EQ(shape->size(), 3u);
      const std::int64_t E = (*shape)[0], R = (*shape)[1], C = (*shape)[2];
      ASSERT_EQ(ref->shape, (Shape{E, C, R})) << name << ": the BF16 folder holds the transpose";
      std::vector<float> mine(static_cast<std::size_t>(E * R * C)), theirs(mine.size());
      ASSERT_TRUE(plain->read(*ref, theirs.data()).ok());
      // Expert by expert, as a forward reads the ones a token uses.
      for (std::int64_t e = 0; e < E; ++e) {
        const Status s = packed->readMxfp4(name, e, 1, mine.data() + e * R * C);
        ASSERT_TRUE(s.ok()) << s.error().message;
      }
      int nonzero = 0;
      for (std::int64_t e = 0; e < E; ++e) {
        for (std::int64_t r = 0; r < R; ++r) {
          for (std::int64_t c = 0; c < C; ++c) {
            const float a = mine[static_cast<std::size_t>((e * R + r) * C + c)];
            ASSERT_EQ(a, theirs[static_cast<std::size_t>((e * C + c) * R + r)]) << name << " " << e << " " << r << " " << c;
            nonzero += a != 0.0f;
          }
        }
      }
      EXPECT_GT(nonzero, E * R * C / 4) << name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

// A .safetensors file of U8 tensors (name, shape, bytes), for the broken pairs.
void writeU8(const fs::path& file, const std::vector<std::tuple<std::string, Shape, std::vector<std::uint8_t>>>& tensors) {
  std::string header = "{", data;
  for (const auto& [name, shape, bytes] : tensors) {
    if (header.size() > 1) header += ",";
    std::string dims;
    for (std::int64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    header += "\"" + name + "\":{\"dtype\":\"U8\",\"shape\":[" + dims + "],\"data_offsets\":[" +
              std::to_string(data.size()) + "," + std::to_string(data.size() + bytes.size()) + "]}";
    data.append(bytes.begin(), bytes.end());
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  for (int k = 0; k < 8; ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
  ASSERT_TRUE(writeFileAtomic(file.string(), out + header + data).ok());
}

TEST(Mxfp4, BrokenPairsNameTheTensorAndTheProblem) {
  const fs::path dir = fs::temp_directory_path() / ("mhascope_mxfp4_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto refusal = [&](const std::vector<std::tuple<std::string, Shape, std::vector<std::uint8_t>>>& tensors) {
    writeU8(dir / "model.safetensors", tensors);
    auto store = WeightStore::openFolder(dir.string());
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return std::string();
    std::vector<float> out(64);
    const Status s = store->readMxfp4("w", 0, 1, out.data());
    return s.ok() ? std::string() : s.error().message;
  };
  const std::vector<std::uint8_t> sixteen(16, 0x11), two(2, 127), one(1, 127);
  std::string m = refusal({{"w_blocks", {1, 1, 16}, sixteen}});
  EXPECT_NE(m.find("'w' needs both w_blocks and w_scales"), std::string::npos) << m;
  m = refusal({{"w_blocks", {1, 2, 8}, sixteen}, {"w_scales", {1, 2}, two}});
  EXPECT_NE(m.find("must be (…, G, 16)"), std::string::npos) << m;
  m = refusal({{"w_blocks", {1, 1, 16}, sixteen}, {"w_scales", {1, 2}, two}});
  EXPECT_NE(m.find("without their last axis"), std::string::npos) << m;
  m = refusal({{"w_blocks", {1, 1, 16}, sixteen}, {"w_scales", {1, 1}, std::vector<std::uint8_t>{255}}});
  EXPECT_NE(m.find("scale byte of 255"), std::string::npos) << m;
  EXPECT_EQ(refusal({{"w_blocks", {1, 1, 16}, sixteen}, {"w_scales", {1, 1}, one}}), "");  // a good pair reads
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope::model
