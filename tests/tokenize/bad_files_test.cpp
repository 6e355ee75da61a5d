// Tokenizer files are untrusted input: each malformed vocabulary, merge list or tokenizer.json is
// refused with one line naming the file and the problem, and what this tokenizer does not
// implement is refused by name instead of being approximated.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "test_support.hpp"
#include "tokenize/byte_level.hpp"

namespace mhascope::tokenize {
namespace {

using nlohmann::json;

// 256 byte tokens (id = byte) plus "Ġt" (256), the smallest valid vocabulary with one merge.
json byteVocab() {
  json v = json::object();
  for (unsigned b = 0; b < 256; ++b) v[bytesToVocabText(std::string(1, static_cast<char>(b)))] = b;
  v["\xC4\xA0t"] = 256;
  return v;
}

const char* kMerges = "#version: 0.2\n\xC4\xA0 t\n";

std::string loadError(const std::string& vocab, const std::string& merges) {
  auto t = BpeTokenizer::fromVocabAndMerges(vocab, "v.json", merges, "m.txt");
  return t.ok() ? "(loaded)" : t.error().message;
}

std::string jsonError(const json& j) {
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "t.json");
  return t.ok() ? "(loaded)" : t.error().message;
}

json llamaStyle() { return json::parse(testing::readAll(testing::fixture("llama_style/tokenizer.json"))); }

#define EXPECT_MESSAGE(actual, part) EXPECT_NE((actual).find(part), std::string::npos) << (actual)

TEST(BadTokenizerFiles, TheSmallestValidPairLoads) {
  auto t = BpeTokenizer::fromVocabAndMerges(byteVocab().dump(), "v.json", kMerges, "m.txt");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t->encode(" to"), (std::vector<std::int32_t>{256, 'o'}));
}

TEST(BadTokenizerFiles, MalformedVocabularies) {
  EXPECT_MESSAGE(loadError("{\"a\": 1", kMerges), "v.json: not valid JSON");
  EXPECT_MESSAGE(loadError("[1, 2]", kMerges), "v.json is array, expected an object of token → id");
  EXPECT_MESSAGE(loadError("{\"a\": 1, \"a\": 2}", kMerges), "v.json: duplicate key 'a'");
  json v = byteVocab();
  v["x"] = "7";
  EXPECT_MESSAGE(loadError(v.dump(), kMerges), "v.json['x'] is string '7', expected an integer token id");
  v["x"] = -3;
  EXPECT_MESSAGE(loadError(v.dump(), kMerges), "v.json['x'] is -3, outside 0 … 2147483647");
  v["x"] = 5.5;
  EXPECT_MESSAGE(loadError(v.dump(), kMerges), "expected an integer token id");
  v["x"] = 99999999999;
  EXPECT_MESSAGE(loadError(v.dump(), kMerges), "outside 0");
  v["x"] = 256;
  EXPECT_MESSAGE(loadError(v.dump(), kMerges), "id 256 is given to both");
  v.erase("x");
  v.erase("\xC4\xA0");  // the space byte
  EXPECT_MESSAGE(loadError(v.dump(), "#version: 0.2\n"), "v.json: the vocabulary has no token for byte 0x20");
  std::string deep(100, '[');
  EXPECT_MESSAGE(loadError(deep, kMerges), "v.json: JSON nested deeper than 32 levels");
  EXPECT_MESSAGE(loadError("{\"\": 1}", kMerges), "v.json has an empty token");
}

TEST(BadTokenizerFiles, MalformedMergeLists) {
  const std::string v = byteVocab().dump();
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\n\xC4\xA0 t x\n"), "m.txt line 2: 'Ġ t x' is not two tokens separated by one space");
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\n\xC4\xA0t\n"), "m.txt line 2: 'Ġt' is not two tokens");
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\n\n"), "m.txt line 2: '' is not two tokens");
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\n\xC4\xA0 zz\n"), "m.txt line 2: merge 'Ġ zz': 'zz' is not in the vocabulary");
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\na b\n"), "merge 'a b': the merged token 'ab' is not in the vocabulary");
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\n\xC4\xA0 t\n\xC4\xA0 t\n"), "m.txt line 3: merge 'Ġ t' appears twice (merges 1 and 2)");
  EXPECT_MESSAGE(loadError(v, "#version: 0.2\n\xFF\xFE\n"), "m.txt: not UTF-8 text");
  // Windows line endings and a missing header are fine.
  EXPECT_EQ(loadError(v, "\xC4\xA0 t\r\n"), "(loaded)");
}

TEST(BadTokenizerFiles, MalformedTokenizerJson) {
  EXPECT_MESSAGE(jsonError(json::array()), "t.json: is array, expected a tokenizer.json object");
  json j = llamaStyle();
  j.erase("model");
  EXPECT_MESSAGE(jsonError(j), "t.json: model is missing or not an object");
  j = llamaStyle();
  j["model"]["merges"][3] = 7;
  EXPECT_MESSAGE(jsonError(j), "t.json: model.merges[3] is 7, expected \"a b\" or [\"a\", \"b\"]");
  j = llamaStyle();
  j["model"]["merges"][0] = "\xC4\xA0 t x";
  EXPECT_MESSAGE(jsonError(j), "model.merges[0]: 'Ġ t x' is not two tokens separated by one space");
  j = llamaStyle();
  j["model"]["vocab"] = "none";
  EXPECT_MESSAGE(jsonError(j), "t.json: model.vocab is string, expected an object");
  j = llamaStyle();
  j["added_tokens"][1]["id"] = 300;
  EXPECT_MESSAGE(jsonError(j), "added_tokens[1]: id 300 of '<|end_of_text|>' is already '<|begin_of_text|>'");
  j = llamaStyle();
  j["added_tokens"][0]["id"] = 261;  // "hello"'s id
  EXPECT_MESSAGE(jsonError(j), "added_tokens[0]: id 261 of '<|begin_of_text|>' is already 'hello'");
  j = llamaStyle();
  j["added_tokens"][0]["content"] = "hello";
  j["added_tokens"][0]["id"] = 5;
  EXPECT_MESSAGE(jsonError(j), "'hello' has id 5 but the vocabulary gives it 261");
  j = llamaStyle();
  j["added_tokens"][2]["content"] = "<|end|>";
  EXPECT_MESSAGE(jsonError(j), "added_tokens[3]: '<|end|>' is listed twice");
  j = llamaStyle();
  j["added_tokens"][0]["content"] = "";
  EXPECT_MESSAGE(jsonError(j), "added_tokens[0].content is missing or empty");
  j = llamaStyle();
  j["post_processor"]["processors"][1]["single"][0]["SpecialToken"]["id"] = "<|nope|>";
  EXPECT_MESSAGE(jsonError(j), "post_processor's '<|nope|>' is not a token of this tokenizer");
  // The template's special_tokens entry inserts its own ids: they must be the added token's.
  j = llamaStyle();
  j["post_processor"]["processors"][1]["special_tokens"]["<|begin_of_text|>"]["ids"] = {7};
  EXPECT_MESSAGE(jsonError(j), "post_processor.special_tokens['<|begin_of_text|>'].ids is [7], but '<|begin_of_text|>' is "
                               "token 300 of this tokenizer: the two must agree");
}

TEST(BadTokenizerFiles, UnsupportedPartsAreRefusedByName) {
  json j = llamaStyle();
  j["model"]["type"] = "WordPiece";
  EXPECT_MESSAGE(jsonError(j), "t.json: model type 'WordPiece' is not supported (BPE only)");
  j = llamaStyle();
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_MESSAGE(jsonError(j), "t.json: normalizer 'NFKC' is not supported (NFC, Prepend, Replace of a text");
  j = llamaStyle();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_MESSAGE(jsonError(j), "t.json: pre_tokenizer: pre-tokenizer 'Whitespace' is not supported");
  // A byte-level vocabulary and decoder with a SentencePiece-style pre-tokenizer: one of them is wrong.
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}};
  EXPECT_MESSAGE(jsonError(j), "t.json: decoder 'ByteLevel' needs a ByteLevel pre-tokenizer, and pre_tokenizer has none");
  j = llamaStyle();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  EXPECT_MESSAGE(jsonError(j), "pre_tokenizer.pretokenizers[0]: the Split regex '\\s+' is not one this tokenizer implements");
  j = llamaStyle();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  EXPECT_MESSAGE(jsonError(j), "Split behavior 'Removed' is not supported");
  j = llamaStyle();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Glob", " "}};
  EXPECT_MESSAGE(jsonError(j), "pre_tokenizer.pretokenizers[0].pattern is {\"Glob\":\" \"}, expected {\"String\": …} or {\"Regex\": …}");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"String", ""}};
  EXPECT_MESSAGE(jsonError(j), "pre_tokenizer.pretokenizers[0].pattern.String is empty");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"String", " "}};
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Glued";
  EXPECT_MESSAGE(jsonError(j), "pre_tokenizer.pretokenizers[0].behavior 'Glued' is not one of \"Removed\", \"Isolated\"");
  j = llamaStyle();
  j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0];
  EXPECT_MESSAGE(jsonError(j), "decoder 'ByteLevel' needs a ByteLevel pre-tokenizer, and pre_tokenizer has none");
  j = llamaStyle();
  j.erase("pre_tokenizer");
  EXPECT_MESSAGE(jsonError(j), "decoder 'ByteLevel' needs a ByteLevel pre-tokenizer, and pre_tokenizer has none");
  j.erase("decoder");
  EXPECT_MESSAGE(jsonError(j), "t.json: decoder is missing; a tokenizer without a ByteLevel pre-tokenizer needs one");
  j = llamaStyle();
  std::swap(j["pre_tokenizer"]["pretokenizers"][0], j["pre_tokenizer"]["pretokenizers"][1]);
  EXPECT_MESSAGE(jsonError(j), "ByteLevel must be the last pre-tokenizer");
  j = llamaStyle();
  j["model"]["dropout"] = 0.1;
  EXPECT_MESSAGE(jsonError(j), "model.dropout 0.1 is not supported");
  j = llamaStyle();
  j["model"]["continuing_subword_prefix"] = "##";
  EXPECT_MESSAGE(jsonError(j), "model.continuing_subword_prefix '##' is not supported");
  j = llamaStyle();
  j["added_tokens"][1]["single_word"] = true;
  EXPECT_MESSAGE(jsonError(j), "added_tokens[1] '<|end_of_text|>' sets single_word, which is not supported");
  j = llamaStyle();
  j["decoder"] = {{"type", "Metaspace"}};
  EXPECT_MESSAGE(jsonError(j), "t.json: decoder 'Metaspace' is not supported with a ByteLevel pre-tokenizer");
  j = llamaStyle();
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  EXPECT_MESSAGE(jsonError(j), "post_processor 'RobertaProcessing' is not supported");
  j = llamaStyle();
  j["post_processor"]["processors"][1]["single"].push_back({{"SpecialToken", {{"id", "<|end_of_text|>"}}}});
  EXPECT_MESSAGE(jsonError(j), "post_processor adds '<|end_of_text|>' after the text");
}

TEST(BadTokenizerFiles, SizesAreBounded) {
  const std::string huge(kMaxTokenizerFileBytes + 1, ' ');
  auto t = BpeTokenizer::fromTokenizerJson(huge, "t.json");
  ASSERT_FALSE(t.ok());
  EXPECT_MESSAGE(t.error().message, "t.json: 67108865 bytes; a tokenizer file may hold at most 67108864 bytes");
  auto m = BpeTokenizer::fromVocabAndMerges(byteVocab().dump(), "v.json", huge, "m.txt");
  ASSERT_FALSE(m.ok());
  EXPECT_MESSAGE(m.error().message, "m.txt: 67108865 bytes");
}

TEST(BadTokenizerFiles, FoldersWithoutATokenizerAndUnreadableFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("mhascope_tok_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto none = loadTokenizer(dir.string());
  ASSERT_FALSE(none.ok());
  EXPECT_MESSAGE(none.error().message, "holds no tokenizer: neither tokenizer.json nor vocab.json + merges.txt");
  std::filesystem::create_directories(dir / "tokenizer.json");  // a folder where the file should be
  auto folder = loadTokenizer(dir.string());
  ASSERT_FALSE(folder.ok());
  EXPECT_MESSAGE(folder.error().message, "tokenizer.json': not a regular file");
  std::filesystem::remove(dir / "tokenizer.json");
  std::ofstream(dir / "tokenizer.json") << "{\"model\": ";
  auto truncated = loadTokenizer(dir.string());
  ASSERT_FALSE(truncated.ok());
  EXPECT_MESSAGE(truncated.error().message, "tokenizer.json': not valid JSON");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mhascope::tokenize
