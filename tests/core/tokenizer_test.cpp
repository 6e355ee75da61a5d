// Tokenizer and display labels.
#include <gtest/gtest.h>

#include "attention/tokenizer.hpp"
#include "util/utf8.hpp"

namespace mhascope {
namespace {

TEST(Tokenizer, SplitsOnAnyAsciiWhitespace) {
  EXPECT_EQ(splitWords("  The cat\tsat\n\non  "), (std::vector<std::string>{"The", "cat", "sat", "on"}));
  EXPECT_TRUE(splitWords("").empty());
  EXPECT_TRUE(splitWords(" \t\n ").empty());
}

TEST(Tokenizer, KeepsNonAsciiTokensWhole) {
  EXPECT_EQ(splitWords("café naïve 日本語 😀"), (std::vector<std::string>{"café", "naïve", "日本語", "😀"}));
}

TEST(Tokenizer, InvalidUtf8BecomesReplacementCharacter) {
  const std::string bad = std::string("ab\xff") + "c \xc3 \xe2\x82 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80";
  const auto toks = splitWords(bad);
  ASSERT_EQ(toks.size(), 6u);
  EXPECT_EQ(toks[0], "ab\xEF\xBF\xBD" "c");                 // stray byte
  EXPECT_EQ(toks[1], "\xEF\xBF\xBD");                       // truncated 2-byte sequence
  EXPECT_EQ(toks[2], "\xEF\xBF\xBD");                       // truncated 3-byte sequence: one subpart
  EXPECT_EQ(toks[3], "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate U+D800
  EXPECT_EQ(toks[4], "\xEF\xBF\xBD\xEF\xBF\xBD");           // overlong '/'
  EXPECT_EQ(replaceInvalidUtf8(toks[5]), toks[5]);          // above U+10FFFF replaced, then stable
  EXPECT_EQ(toks[5].find('\xf4'), std::string::npos);
  EXPECT_EQ(replaceInvalidUtf8("plain ascii"), "plain ascii");
}

TEST(Tokenizer, DisplayTokenFallsBackForGlyphsImGuiCannotDraw) {
  EXPECT_EQ(displayToken("café"), "café");
  EXPECT_EQ(displayToken("日本"), "日本");
  EXPECT_EQ(displayToken("hi😀"), "hiU+1F600");
  EXPECT_EQ(displayToken("a\x07"), "aU+0007");
}

TEST(Tokenizer, BatchItemsAndResizing) {
  EXPECT_EQ(splitBatch("a b | c d e\nf |  | "), (std::vector<std::string>{"a b ", " c d e", "f "}));
  EXPECT_EQ(resizeTokens({"a", "b", "c"}, 2), (std::vector<std::string>{"a", "b"}));
  const auto longer = resizeTokens({"a"}, 40);
  EXPECT_EQ(longer.size(), 40u);
  EXPECT_EQ(longer[0], "a");
  EXPECT_TRUE(resizeTokens({"a"}, 0).empty());
  EXPECT_EQ(utf8Length("café"), 4u);
}

}  // namespace
}  // namespace mhascope
