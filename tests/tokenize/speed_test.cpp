// Tokenizing about 1 MB of text takes bounded time: ordinary prose (many repeated words, the
// per-call cache's case) and the worst shapes for BPE — one 1 MB word (a single piece of a
// million bytes: the merge queue keeps it O(n log n), not O(n²)), a run of spaces and a text of
// random bytes. The bound is generous (a slow or sanitizer build must pass); what it catches is
// quadratic behaviour, which would take minutes here.
#include <gtest/gtest.h>

#include <chrono>

#include "test_support.hpp"

namespace mhascope::tokenize {
namespace {

constexpr double kBoundSeconds = 20.0;
constexpr std::size_t kOneMb = 1u << 20;

double secondsToEncode(const BpeTokenizer& t, const std::string& text, std::size_t* tokens) {
  const auto start = std::chrono::steady_clock::now();
  auto ids = t.encode(text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(ids.ok());
  *tokens = ids.ok() ? ids->size() : 0;
  return s;
}

TEST(TokenizerSpeed, OneMegabyteOfProse) {
  const BpeTokenizer t = testing::gpt2();
  const std::string paragraph =
      "The quick brown fox jumps over the lazy dog. In 1984, 3.14159 pies were eaten; don't ask why!\n"
      "Attention weights mix information across tokens: softmax(QK^T / sqrt(d_k)) V. ";
  std::string text;
  unsigned word = 0;
  while (text.size() < kOneMb) {
    text += paragraph;
    text += " w" + std::to_string(word++ * 2654435761u % 1000003u) + "x";  // fresh words defeat the cache
  }
  std::size_t tokens = 0;
  const double s = secondsToEncode(t, text, &tokens);
  EXPECT_LT(s, kBoundSeconds);
  EXPECT_GT(tokens, text.size() / 8);
  std::printf("[ speed    ] %zu bytes -> %zu tokens in %.3f s\n", text.size(), tokens, s);
}

TEST(TokenizerSpeed, WorstShapes) {
  const BpeTokenizer t = testing::gpt2();
  std::string randomBytes(kOneMb, '\0');
  std::uint32_t x = 2463534242u;
  for (char& c : randomBytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xFF);
  }
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"one word", std::string(kOneMb, 'a')},
           {"spaces", std::string(kOneMb, ' ')},
           {"random bytes", randomBytes}}) {
    std::size_t tokens = 0;
    const double s = secondsToEncode(t, text, &tokens);
    EXPECT_LT(s, kBoundSeconds) << name;
    EXPECT_GT(tokens, 0u) << name;
    std::printf("[ speed    ] %s: %zu bytes -> %zu tokens in %.3f s\n", name.c_str(), text.size(), tokens, s);
  }
}

}  // namespace
}  // namespace mhascope::tokenize
