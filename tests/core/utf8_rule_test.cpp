// One rule for ill-formed UTF-8 (util/utf8), whichever part of the core reads the text: the
// replacement itself, the word tokenizer, display labels, layout lengths and the exporter's fonts
// all replace the same bytes with the same number of U+FFFD. The BPE tokenizer's side is in
// tests/tokenize/utf8_rule_test.cpp, over the same cases.
#include <gtest/gtest.h>

#include <string>

#include "attention/tokenizer.hpp"
#include "export/fonts.hpp"
#include "util/utf8.hpp"
#include "utf8_cases.hpp"

namespace mhascope {
namespace {

using testing::countReplacements;
using testing::kIllFormedUtf8;

TEST(Utf8Rule, ReplacementFollowsMaximalSubparts) {
  for (const auto& c : kIllFormedUtf8) {
    SCOPED_TRACE(c.why);
    const std::string out = replaceInvalidUtf8(c.bytes);
    EXPECT_EQ(countReplacements(out), c.replacements);
    EXPECT_TRUE(isValidUtf8(out));
    EXPECT_EQ(replaceInvalidUtf8(out), out);  // stable once replaced
    EXPECT_EQ(firstInvalidUtf8(c.bytes), c.firstInvalid);
    EXPECT_FALSE(isValidUtf8(c.bytes));
  }
  EXPECT_EQ(replaceInvalidUtf8("a\xF1\x80\x80\xE1\x80\xC2" "b\x80" "c\x80\xBF" "d"),
            "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d");
}

TEST(Utf8Rule, StepsReportTheSubpartTheyReplace) {
  const Utf8Step truncated = decodeUtf8Step("\xF0\x9F\x98", 0);
  EXPECT_FALSE(truncated.valid);
  EXPECT_EQ(truncated.cp, U'\uFFFD');
  EXPECT_EQ(truncated.len, 3u);
  const Utf8Step overlong = decodeUtf8Step("\xF0\x80\x80", 0);
  EXPECT_FALSE(overlong.valid);
  EXPECT_EQ(overlong.len, 1u);
  const Utf8Step emoji = decodeUtf8Step("\xF0\x9F\x98\x80", 0);
  EXPECT_TRUE(emoji.valid);
  EXPECT_EQ(emoji.cp, U'\U0001F600');
  EXPECT_EQ(emoji.len, 4u);
  char32_t cp = 0;
  EXPECT_EQ(decodeUtf8("\xED\x9F\xBF", 0, cp), 3u);  // U+D7FF, just below the surrogates
  EXPECT_EQ(cp, U'\uD7FF');
  EXPECT_EQ(decodeUtf8("\xF4\x8F\xBF\xBF", 0, cp), 4u);  // U+10FFFF, the last code point
  EXPECT_EQ(decodeUtf8("\xED\xA0\x80", 0, cp), 0u);
}

TEST(Utf8Rule, EveryReaderInTheCoreReplacesAlike) {
  for (const auto& c : kIllFormedUtf8) {
    SCOPED_TRACE(c.why);
    const std::string replaced = replaceInvalidUtf8(c.bytes);

    std::string words;
    for (const auto& w : splitWords(c.bytes)) words += w;  // the cases hold no whitespace
    EXPECT_EQ(words, replaced) << "splitWords";

    EXPECT_EQ(countReplacements(displayToken(c.bytes)), c.replacements) << "displayToken";

    std::size_t codePoints = 0;
    for (std::size_t i = 0; i < replaced.size(); i += decodeUtf8Step(replaced, i).len) ++codePoints;
    EXPECT_EQ(utf8Length(c.bytes), codePoints) << "utf8Length";

    std::size_t fromFonts = 0, n = 0;
    for (std::size_t i = 0; i < c.bytes.size(); ++n) fromFonts += export_detail::decodeAt(c.bytes, i) == U'\uFFFD';
    EXPECT_EQ(fromFonts, c.replacements) << "export_detail::decodeAt";
    EXPECT_EQ(n, codePoints) << "export_detail::decodeAt";
  }
}

}  // namespace
}  // namespace mhascope
