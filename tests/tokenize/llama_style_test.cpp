// A tiny tokenizer.json laid out as Llama 3's (Split with the Llama-3 regex, then ByteLevel
// without its regex; added tokens; ignore_merges; a BOS template). Ids 0-255 are the bytes, then
// 256 "Ġt", 257 "he", 258 "Ġthe", 259 "ll", 260 "hell", 261 "hello", 262 "12", 263 "123",
// 264 "ĊĊ", 265 "ĠĠ", 266 "'s" (one per merge, in rank order), 267 "Ġworld" (no merge makes it),
// and the added tokens 300 <|begin_of_text|>, 301 <|end_of_text|>, 302 <|eot_id|>, 303 <|end|>.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace mhascope::tokenize {
namespace {

using Ids = std::vector<std::int32_t>;

BpeTokenizer llama() {
  auto t = loadTokenizer(testing::fixture("llama_style"));
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

TEST(LlamaStyle, Loads) {
  const BpeTokenizer t = llama();
  EXPECT_EQ(t.vocabSize(), 256u + 12u + 4u);
  EXPECT_EQ(t.mergeCount(), 11u);
  EXPECT_TRUE(t.ignoreMerges());
  ASSERT_EQ(t.preTokenizer().size(), 2u);
  EXPECT_EQ(t.preTokenizer()[0].regex, SplitRegex::Llama3);
  EXPECT_FALSE(t.preTokenizer()[1].useRegex);
  EXPECT_EQ(t.bosToken(), 300);
  EXPECT_NE(t.describe().find("Split (Llama-3 regex), ByteLevel"), std::string::npos) << t.describe();
}

TEST(LlamaStyle, WholeWordsComeFromTheVocabularyAndTheRestFromMerges) {
  const BpeTokenizer t = llama();
  EXPECT_EQ(*t.encode("hello the world"), (Ids{261, 258, 267}));  // " world" only through ignore_merges
  EXPECT_EQ(*t.encode("hellos"), (Ids{261, 's'}));                 // he, ll, hell, hello by rank
  EXPECT_EQ(*t.encode("12345"), (Ids{263, '4', '5'}));             // \p{N}{1,3}: "123" "45"
  EXPECT_EQ(*t.encode("it's IT'S"), (Ids{'i', 't', 266, ' ', 'I', 'T', '\'', 'S'}));
  EXPECT_EQ(*t.encode("a\n\nb"), (Ids{'a', 264, 'b'}));
  EXPECT_EQ(*t.encode("  the"), (Ids{' ', 258}));
  EXPECT_EQ(*t.encode("x  "), (Ids{'x', 265}));
  EXPECT_TRUE(t.encode("")->empty());
}

TEST(LlamaStyle, AddedTokensAreMatchedFirst) {
  const BpeTokenizer t = llama();
  EXPECT_EQ(*t.encode("<|begin_of_text|>hello<|end|><|end_of_text|>"), (Ids{300, 261, 303, 301}));
  EXPECT_EQ(*t.encode("<|end|"), (Ids{'<', '|', 'e', 'n', 'd', '|'}));  // not complete: plain text
  EXPECT_EQ(*t.decode({300, 261, 258}), "<|begin_of_text|>hello the");
  EXPECT_TRUE(t.isSpecial(302));
  EXPECT_EQ(t.displayToken(302), "<|eot_id|>");
}

TEST(LlamaStyle, WithoutIgnoreMergesAWordIsOnlyWhatMergesMake) {
  auto j = nlohmann::json::parse(testing::readAll(testing::fixture("llama_style/tokenizer.json")));
  j["model"]["ignore_merges"] = false;
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "tokenizer.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t->encode(" world"), (Ids{' ', 'w', 'o', 'r', 'l', 'd'}));
}

TEST(LlamaStyle, DigitsStepAsSmolLM2HasIt) {
  auto j = nlohmann::json::parse(testing::readAll(testing::fixture("llama_style/tokenizer.json")));
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Digits"}, {"individual_digits", true}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}}}};
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "tokenizer.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t->encode("12345"), (Ids{'1', '2', '3', '4', '5'}));
}

}  // namespace
}  // namespace mhascope::tokenize
