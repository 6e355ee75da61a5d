// NFC (for tokenizer.json files whose normalizer is NFC, as Qwen2's) against Python's
// unicodedata.normalize: every code point NFC changes, and random sequences of combining marks,
// Hangul jamo, composition exclusions and letters (scripts/gen_unicode_tables.py).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "tokenize/nfc.hpp"

namespace mhascope::tokenize {
namespace {

TEST(Nfc, MatchesPythonOnEveryChangedCodePointAndRandomSequences) {
  const auto cases = nlohmann::json::parse(testing::readAll(testing::fixture("nfc_cases.json")));
  ASSERT_GE(cases.size(), 2000u);
  int failures = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const std::string want = c["nfc"];
    const std::string got = toNfc(text);
    if (got != want && ++failures <= 10) ADD_FAILURE() << "NFC of " << nlohmann::json(text).dump() << ": got "
                                                       << nlohmann::json(got).dump() << ", Python gives " << nlohmann::json(want).dump();
  }
  EXPECT_EQ(failures, 0);
}

TEST(Nfc, Examples) {
  EXPECT_EQ(toNfc("Cafe\xCC\x81"), "Caf\xC3\xA9");              // e + U+0301 → é
  EXPECT_EQ(toNfc("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"), "\xED\x95\x9C");  // jamo → 한
  EXPECT_EQ(toNfc("\xE2\x84\xAB"), "\xC3\x85");                 // Angstrom sign → Å
  EXPECT_EQ(toNfc("plain ASCII"), "plain ASCII");
  EXPECT_EQ(toNfc(""), "");
}

TEST(Nfc, ANormalizerNfcTokenizerComposesBeforeSplitting) {
  auto j = nlohmann::json::parse(testing::readAll(testing::fixture("llama_style/tokenizer.json")));
  j["normalizer"] = {{"type", "NFC"}};
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "tokenizer.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->normalizesToNfc());
  // "é" as e + U+0301 becomes the one code point U+00E9 (bytes C3 A9): two byte tokens, not three.
  EXPECT_EQ(*t->encode("e\xCC\x81"), (std::vector<std::int32_t>{0xC3, 0xA9}));
  auto plain = loadTokenizer(testing::fixture("llama_style"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain->encode("e\xCC\x81"), (std::vector<std::int32_t>{'e', 0xCC, 0x81}));
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
  EXPECT_TRUE(BpeTokenizer::fromTokenizerJson(j.dump(), "tokenizer.json").ok());
}

}  // namespace
}  // namespace mhascope::tokenize
