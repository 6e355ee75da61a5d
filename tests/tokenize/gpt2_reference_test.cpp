// GPT-2's real vocabulary against the reference ids of a varied corpus (contractions, numbers,
// whitespace runs, Unicode, emoji, <|endoftext|>): every case must give exactly the reference ids
// and decode back to its text, through vocab.json + merges.txt and through a tokenizer.json
// holding the same vocabulary (both merge spellings).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace mhascope::tokenize {
namespace {

using testing::fixture;
using testing::readAll;
using testing::firstMismatch;

struct Case {
  std::string name;
  std::string text;
  std::vector<std::int32_t> ids;
};

std::vector<Case> loadCases() {
  const auto j = nlohmann::json::parse(readAll(fixture("gpt2_cases.json")));
  std::vector<Case> cases;
  for (const auto& c : j) cases.push_back({c["name"], c["text"], c["ids"].get<std::vector<std::int32_t>>()});
  return cases;
}

void expectAllCases(const BpeTokenizer& t) {
  const auto cases = loadCases();
  ASSERT_GE(cases.size(), 40u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto ids = t.encode(c.text);
    ASSERT_TRUE(ids.ok()) << ids.error().message;
    EXPECT_EQ(*ids, c.ids) << firstMismatch(*ids, c.ids);
    auto back = t.decode(*ids);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, c.text);
  }
}

TEST(Gpt2Reference, VocabularyHasGpt2Sizes) {
  const BpeTokenizer t = testing::gpt2();
  EXPECT_EQ(t.vocabSize(), 50257u);
  EXPECT_EQ(t.mergeCount(), 50000u);
  ASSERT_EQ(t.addedTokens().size(), 1u);
  EXPECT_EQ(t.addedTokens()[0].content, "<|endoftext|>");
  EXPECT_EQ(t.addedTokens()[0].id, 50256);
  EXPECT_TRUE(t.isSpecial(50256));
  EXPECT_FALSE(t.isSpecial(995));
}

TEST(Gpt2Reference, VocabAndMergesGiveTheReferenceIds) { expectAllCases(testing::gpt2()); }

// The same vocabulary as Hugging Face writes GPT-2's tokenizer.json.
nlohmann::json gpt2TokenizerJson(bool pairMerges) {
  nlohmann::json merges = nlohmann::json::array();
  const std::string text = readAll(fixture("gpt2/merges.txt"));
  std::size_t pos = text.find('\n') + 1;  // past "#version: 0.2"
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (pairMerges) {
      const std::size_t space = line.find(' ');
      merges.push_back({line.substr(0, space), line.substr(space + 1)});
    } else {
      merges.push_back(line);
    }
  }
  nlohmann::json j;
  j["version"] = "1.0";
  j["added_tokens"] = {{{"id", 50256}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false},
                        {"rstrip", false}, {"normalized", true}, {"special", true}}};
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false},
                {"vocab", nlohmann::json::parse(readAll(fixture("gpt2/vocab.json")))}, {"merges", merges}};
  return j;
}

TEST(Gpt2Reference, TokenizerJsonWithStringMergesGivesTheReferenceIds) {
  auto t = BpeTokenizer::fromTokenizerJson(gpt2TokenizerJson(false).dump(), "tokenizer.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->vocabSize(), 50257u);
  EXPECT_FALSE(t->bosToken().has_value());
  expectAllCases(*t);
}

TEST(Gpt2Reference, TokenizerJsonWithPairMergesGivesTheReferenceIds) {
  auto t = BpeTokenizer::fromTokenizerJson(gpt2TokenizerJson(true).dump(), "tokenizer.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  expectAllCases(*t);
}

TEST(Gpt2Reference, AddPrefixSpaceTreatsTheFirstWordAsMidSentence) {
  auto j = gpt2TokenizerJson(false);
  j["pre_tokenizer"]["add_prefix_space"] = true;
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "tokenizer.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t->encode("Hello world"), (std::vector<std::int32_t>{18435, 995}));  // " Hello", " world"
  EXPECT_EQ(*t->encode(" Hello world"), (std::vector<std::int32_t>{18435, 995}));  // no second space
}

TEST(Gpt2Reference, TokensShowTheirSpaceAndIds) {
  const BpeTokenizer t = testing::gpt2();
  const auto ids = *t.encode("Hello world\n<|endoftext|>");
  ASSERT_EQ(ids, (std::vector<std::int32_t>{15496, 995, 198, 50256}));
  EXPECT_EQ(*t.tokenText(995), "\xC4\xA0world");        // "Ġworld" as stored
  EXPECT_EQ(*t.tokenBytes(995), " world");
  EXPECT_EQ(t.displayToken(995), "\xE2\x90\xA3world");  // "␣world"
  EXPECT_EQ(t.displayToken(198), "\\n");
  EXPECT_EQ(t.displayToken(50256), "<|endoftext|>");
  EXPECT_EQ(*t.tokenId("\xC4\xA0world"), 995);
  EXPECT_EQ(*t.tokenId("<|endoftext|>"), 50256);
}

TEST(Gpt2Reference, InvalidUtf8BecomesReplacementCharacter) {
  const BpeTokenizer t = testing::gpt2();
  const auto bad = *t.encode("a\xFF" "b\xE2\x82");
  const auto good = *t.encode("a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  EXPECT_EQ(bad, good);
  EXPECT_EQ(*t.decode(bad), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

TEST(Gpt2Reference, DecodeOfAnEmojiCutBetweenTokensIsReplaced) {
  const BpeTokenizer t = testing::gpt2();
  const auto ids = *t.encode("\xF0\x9F\x98\x80");  // 😀 takes several byte tokens
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(*t.decode(ids), "\xF0\x9F\x98\x80");
  const std::vector<std::int32_t> first(ids.begin(), ids.begin() + 1);
  EXPECT_EQ(*t.decode(first), "\xEF\xBF\xBD");
  EXPECT_NE(t.displayToken(first[0]).find("<0x"), std::string::npos);  // bytes shown, not garbage
}

TEST(Gpt2Reference, UnknownIdInDecodeIsAnError) {
  const BpeTokenizer t = testing::gpt2();
  auto r = t.decode({15496, 50257});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("token id 50257 (position 1) is not in the vocabulary of 50257 tokens"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(t.decode({-1}).ok());
}

TEST(Gpt2Reference, TextAboveTheLimitIsRefused) {
  const BpeTokenizer t = testing::gpt2();
  auto r = t.encode(std::string(kMaxTextBytes + 1, 'a'));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("4194305 bytes; the tokenizer takes at most 4194304"), std::string::npos)
      << r.error().message;
}

TEST(Gpt2Reference, LoadsFromTheFolder) {
  auto t = loadTokenizer(fixture("gpt2"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->vocabSize(), 50257u);
  EXPECT_EQ(*t->encode("Hello world"), (std::vector<std::int32_t>{15496, 995}));
}

}  // namespace
}  // namespace mhascope::tokenize
