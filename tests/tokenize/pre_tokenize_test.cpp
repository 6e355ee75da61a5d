// The hand-written pre-tokenizer regexes against a real regex engine: the pieces V8 cuts the
// corpus and 300 random strings into (scripts/gen_tokenizer_fixtures.js), for the GPT-2, Llama-3,
// Qwen2, o200k and DeepSeek-V3 regexes; then the Digits pre-tokenizer and the Unicode classes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "tokenize/pre_tokenize.hpp"
#include "tokenize/unicode_classes.hpp"

namespace mhascope::tokenize {
namespace {

std::vector<std::string> pieces(std::string_view text, const ByteSpans& spans) {
  std::vector<std::string> out;
  for (const auto& [b, e] : spans) out.emplace_back(text.substr(b, e - b));
  return out;
}

std::vector<std::string> split(SplitRegex regex, std::string_view text) { return pieces(text, splitByRegex(regex, text)); }

TEST(PreTokenize, MatchesARegexEngineOnCorpusAndRandomStrings) {
  const auto cases = nlohmann::json::parse(testing::readAll(testing::fixture("split_cases.json")));
  ASSERT_GE(cases.size(), 300u);
  int checked = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    SCOPED_TRACE(text);
    EXPECT_EQ(split(SplitRegex::Gpt2, text), c["gpt2"].get<std::vector<std::string>>());
    EXPECT_EQ(split(SplitRegex::Llama3, text), c["llama3"].get<std::vector<std::string>>());
    EXPECT_EQ(split(SplitRegex::Qwen2, text), c["qwen2"].get<std::vector<std::string>>());
    EXPECT_EQ(split(SplitRegex::O200k, text), c["o200k"].get<std::vector<std::string>>());
    EXPECT_EQ(split(SplitRegex::DeepSeekDigits, text), c["deepseek_digits"].get<std::vector<std::string>>());
    EXPECT_EQ(split(SplitRegex::DeepSeekCjk, text), c["deepseek_cjk"].get<std::vector<std::string>>());
    EXPECT_EQ(split(SplitRegex::DeepSeekWords, text), c["deepseek_words"].get<std::vector<std::string>>());
    ++checked;
  }
  EXPECT_GE(checked, 300);
}

TEST(PreTokenize, Gpt2Examples) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split(SplitRegex::Gpt2, "Hello world's  end  "), (V{"Hello", " world", "'s", " ", " end", "  "}));
  EXPECT_EQ(split(SplitRegex::Gpt2, "DON'T 12345"), (V{"DON", "'", "T", " 12345"}));  // case-sensitive
  EXPECT_EQ(split(SplitRegex::Gpt2, "a\n\n b"), (V{"a", "\n\n", " b"}));
  EXPECT_TRUE(split(SplitRegex::Gpt2, "").empty());
}

TEST(PreTokenize, Llama3Examples) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split(SplitRegex::Llama3, "DON'T 12345"), (V{"DON", "'T", " ", "123", "45"}));  // (?i:…), \p{N}{1,3}
  EXPECT_EQ(split(SplitRegex::Llama3, "x.\n\ny"), (V{"x", ".\n\n", "y"}));                 // [\r\n]* after punctuation
  EXPECT_EQ(split(SplitRegex::Llama3, "a \n \nb"), (V{"a", " \n \n", "b"}));               // \s*[\r\n]+
  EXPECT_EQ(split(SplitRegex::Llama3, "\tword"), (V{"\tword"}));                           // [^\r\n\p{L}\p{N}]?\p{L}+
  EXPECT_EQ(split(SplitRegex::Llama3, "it\xC5\xBF"), (V{"it\xC5\xBF"}));                   // a letter run
  EXPECT_EQ(split(SplitRegex::Llama3, "'\xC5\xBF"), (V{"'\xC5\xBF"}));                      // 'ſ folds to 's
  EXPECT_EQ(split(SplitRegex::Qwen2, "12345"), (V{"1", "2", "3", "4", "5"}));
}

TEST(PreTokenize, O200kExamples) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split(SplitRegex::O200k, "HelloWorld HTTPServer"), (V{"Hello", "World", " HTTPServer"}));
  EXPECT_EQ(split(SplitRegex::O200k, "don't DON'T"), (V{"don't", " DON'T"}));  // contractions stay with the word
  EXPECT_EQ(split(SplitRegex::O200k, "a/b//\n/c"), (V{"a", "/b", "//\n/", "c"}));  // [\r\n/]* after punctuation
  EXPECT_EQ(split(SplitRegex::O200k, "12345 x"), (V{"123", "45", " x"}));
  EXPECT_EQ(split(SplitRegex::O200k, "\xE4\xB8\xAD\xE6\x96\x87" "a"), (V{"\xE4\xB8\xAD\xE6\x96\x87" "a"}));  // Lo then Ll: one piece
}

TEST(PreTokenize, DeepSeekExamples) {
  using V = std::vector<std::string>;
  // The stretches between matches are pieces too.
  EXPECT_EQ(split(SplitRegex::DeepSeekDigits, "ab12345c"), (V{"ab", "123", "45", "c"}));
  EXPECT_EQ(split(SplitRegex::DeepSeekCjk, "x\xE4\xB8\xAD\xE6\x96\x87y"), (V{"x", "\xE4\xB8\xAD\xE6\x96\x87", "y"}));
  EXPECT_EQ(split(SplitRegex::DeepSeekWords, "it's a.b 12"), (V{"it", "'s", " a", ".b", " ", "12"}));
  EXPECT_TRUE(split(SplitRegex::DeepSeekDigits, "").empty());
}

TEST(PreTokenize, DigitsSplitsNumbersAlone) {
  using V = std::vector<std::string>;
  const std::string text = "ab12 3\xD9\xA3x";  // U+0663 ARABIC-INDIC DIGIT THREE
  EXPECT_EQ(pieces(text, splitDigits(text, true)), (V{"ab", "1", "2", " ", "3", "\xD9\xA3", "x"}));
  EXPECT_EQ(pieces(text, splitDigits(text, false)), (V{"ab", "12", " ", "3\xD9\xA3", "x"}));
}

TEST(UnicodeClasses, LettersNumbersSpaces) {
  EXPECT_TRUE(isLetter(U'é'));
  EXPECT_TRUE(isLetter(U'中'));
  EXPECT_TRUE(isLetter(0x05D0));   // Hebrew alef
  EXPECT_FALSE(isLetter(0x0301));  // combining acute: a mark, not a letter
  EXPECT_FALSE(isLetter(U'1'));
  EXPECT_TRUE(isNumber(U'½'));
  EXPECT_TRUE(isNumber(0x2167));   // Roman numeral eight (Nl)
  EXPECT_TRUE(isNumber(0x0663));
  EXPECT_FALSE(isNumber(U'a'));
  EXPECT_TRUE(isWhitespace(0x00A0));
  EXPECT_TRUE(isWhitespace(0x3000));
  EXPECT_TRUE(isWhitespace(0x0085));
  EXPECT_FALSE(isWhitespace(0x200B));  // zero-width space is not White_Space
  EXPECT_FALSE(isWhitespace(0xFEFF));
  EXPECT_FALSE(isLetter(0x1F600));
  EXPECT_FALSE(isNumber(0x10FFFF));
}

}  // namespace
}  // namespace mhascope::tokenize
