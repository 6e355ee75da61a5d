// The BPE tokenizer replaces ill-formed UTF-8 by the rule the rest of mhascope follows (util/utf8,
// checked for the core's readers in tests/core/utf8_rule_test.cpp over the same cases): in the
// text it encodes, in the code points its splitters see, and in the bytes it decodes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../core/utf8_cases.hpp"
#include "test_support.hpp"
#include "tokenize/byte_level.hpp"
#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {
namespace {

using mhascope::testing::countReplacements;
using mhascope::testing::kIllFormedUtf8;

TEST(Utf8Rule, CodePointsOfIllFormedTextAreTheReplacedOnes) {
  for (const auto& c : kIllFormedUtf8) {
    SCOPED_TRACE(c.why);
    const CodePoints cps = decodeAll(c.bytes);
    std::size_t fffd = 0;
    for (char32_t cp : cps.cps) fffd += cp == U'\uFFFD';
    EXPECT_EQ(fffd, c.replacements);
    EXPECT_EQ(cps.cps, decodeAll(replaceInvalidUtf8(c.bytes)).cps);
    ASSERT_EQ(cps.offsets.size(), cps.cps.size() + 1);
    EXPECT_EQ(cps.offsets.back(), c.bytes.size());
  }
}

TEST(Utf8Rule, EncodeAndDecodeReplaceAsTheCoreDoes) {
  const BpeTokenizer t = testing::gpt2();
  for (const auto& c : kIllFormedUtf8) {
    SCOPED_TRACE(c.why);
    const std::string replaced = replaceInvalidUtf8(c.bytes);
    const auto ids = t.encode(c.bytes);
    ASSERT_TRUE(ids.ok()) << ids.error().message;
    EXPECT_EQ(*ids, *t.encode(replaced));
    const auto back = t.decode(*ids);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(countReplacements(*back), c.replacements);

    // The raw bytes as single-byte tokens: decode meets the ill-formed bytes themselves.
    std::vector<std::int32_t> byteIds;
    for (char b : c.bytes) {
      const auto id = t.tokenId(bytesToVocabText(std::string(1, b)));
      ASSERT_TRUE(id.has_value());
      byteIds.push_back(*id);
    }
    const auto raw = t.decode(byteIds);
    ASSERT_TRUE(raw.ok()) << raw.error().message;
    EXPECT_EQ(*raw, replaced);
  }
}

}  // namespace
}  // namespace mhascope::tokenize
