// A tiny SentencePiece-style tokenizer.json, built here, laid out as Llama 2's (the Prepend "▁" +
// Replace " " → "▁" normalizer, no pre-tokenizer, byte_fallback, <unk> fused, the decoder
// Replace / ByteFallback / Fuse / Strip) and as the newer Metaspace form, with ids worked out by
// hand: 0 <unk>, 1 <s>, 2 </s>, 3 … 258 <0x00> … <0xFF>, 259 "▁", 260 "h", 261 "e", 262 "l",
// 263 "o", 264 "w", 265 "r", 266 "d", 267 "é", then one token per merge in rank order: 268 "▁h",
// 269 "el", 270 "▁hel", 271 "lo", 272 "▁hello", 273 "▁▁", and 274 "▁world" (no merge makes it).
// Also the literal-text Split's behaviors, and every way such a file can be wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace mhascope::tokenize {
namespace {

using nlohmann::json;
using Ids = std::vector<std::int32_t>;

const char* kMark = "\xE2\x96\x81";  // "▁", U+2581

std::string marked(const std::string& s) {  // "_" spelled as "▁"
  std::string out;
  for (char c : s) {
    if (c == '_') {
      out += kMark;
    } else {
      out += c;
    }
  }
  return out;
}

std::int32_t byteId(unsigned b) { return 3 + static_cast<std::int32_t>(b); }

json llama2Style() {
  json vocab = json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (unsigned b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = byteId(b);
  }
  std::int32_t next = 259;
  for (const char* c : {"_", "h", "e", "l", "o", "w", "r", "d", "\xC3\xA9"}) vocab[marked(c)] = next++;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"_", "h"}, {"e", "l"}, {"_h", "el"}, {"l", "o"}, {"_hel", "lo"}, {"_", "_"}};
  json mergeList = json::array();
  for (const auto& [a, b] : merges) {
    vocab[marked(a + b)] = next++;
    mergeList.push_back(marked(a) + " " + marked(b));
  }
  vocab[marked("_world")] = next++;
  auto added = [](int id, const char* content) {
    return json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  json j;
  j["version"] = "1.0";
  j["added_tokens"] = {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")};
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Prepend"}, {"prepend", kMark}},
                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMark}}}}};
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", kMark}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true},
                {"vocab", vocab}, {"merges", mergeList}};
  return j;
}

// The newer layout: no normalizer, a Metaspace pre-tokenizer and decoder.
json metaspaceStyle(const char* scheme, bool split) {
  json j = llama2Style();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kMark}, {"prepend_scheme", scheme}, {"split", split}};
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", kMark}, {"prepend_scheme", scheme}, {"split", split}};
  return j;
}

BpeTokenizer load(const json& j) {
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "t.json");
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

std::string spError(const json& j) {
  auto t = BpeTokenizer::fromTokenizerJson(j.dump(), "t.json");
  return t.ok() ? "(loaded)" : t.error().message;
}

#define EXPECT_MESSAGE(actual, part) EXPECT_NE((actual).find(part), std::string::npos) << (actual)

TEST(SentencePieceStyle, Loads) {
  const BpeTokenizer t = load(llama2Style());
  EXPECT_FALSE(t.byteLevel());
  EXPECT_TRUE(t.byteFallback());
  EXPECT_EQ(t.unknownToken(), 0);
  EXPECT_EQ(t.vocabSize(), 275u);
  EXPECT_EQ(t.mergeCount(), 6u);
  EXPECT_EQ(t.bosToken(), 1);
  EXPECT_TRUE(t.preTokenizer().empty());
  ASSERT_EQ(t.normalizer().size(), 2u);
  EXPECT_EQ(t.normalizer()[0].kind, NormalizerStep::Kind::Prepend);
  EXPECT_EQ(t.describe(), "SentencePiece-style BPE: 275 tokens, 6 merges, 3 added tokens; normalizer: Prepend '▁', "
                          "Replace ' ' → '▁'; pre-tokenizer: none; characters without a token as <0xNN> bytes; "
                          "unknown: '<unk>' (a run as one)");
}

TEST(SentencePieceStyle, SpacesBecomeTheMarkAndMergesGoByRank) {
  const BpeTokenizer t = load(llama2Style());
  EXPECT_EQ(*t.encode("hello"), (Ids{272}));  // ▁h, el, ▁hel, lo, ▁hello
  // No pre-tokenizer: the whole text is one piece, and "▁w" has no merge.
  EXPECT_EQ(*t.encode("hello world"), (Ids{272, 259, 264, 263, 265, 262, 266}));
  EXPECT_EQ(*t.encode("hello  hello"), (Ids{272, 259, 272}));  // ▁h (rank 0) comes before ▁▁ (rank 5)
  EXPECT_EQ(*t.encode(" hello"), (Ids{259, 272}));             // the Prepend's ▁ and the space's
  EXPECT_EQ(*t.encode("hello  "), (Ids{272, 273}));
  EXPECT_EQ(*t.encode("h\xC3\xA9"), (Ids{268, 267}));
  EXPECT_TRUE(t.encode("")->empty());
}

TEST(SentencePieceStyle, CharactersWithoutATokenFallBackToTheirBytes) {
  const BpeTokenizer t = load(llama2Style());
  EXPECT_EQ(*t.encode("x"), (Ids{259, byteId('x')}));
  EXPECT_EQ(*t.encode("\xE4\xB8\xAD"), (Ids{259, byteId(0xE4), byteId(0xB8), byteId(0xAD)}));  // 中
  EXPECT_EQ(*t.encode("a\nb"), (Ids{259, byteId('a'), byteId('\n'), byteId('b')}));
  EXPECT_EQ(*t.tokenText(byteId('\n')), "<0x0A>");
  EXPECT_EQ(*t.tokenBytes(byteId('\n')), "\n");
  EXPECT_EQ(*t.tokenBytes(272), " hello");
  EXPECT_EQ(t.displayToken(272), "\xE2\x90\xA3hello");     // "␣hello", as byte-level tokens show
  EXPECT_EQ(t.displayToken(byteId(0xE4)), "<0xE4>");       // one byte of a character
}

TEST(SentencePieceStyle, WithoutByteFallbackTheUnknownTokenStandsIn) {
  json j = llama2Style();
  j["model"]["byte_fallback"] = false;
  EXPECT_EQ(*load(j).encode("xyh"), (Ids{259, 0, 260}));  // x and y fused into one <unk>
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(*load(j).encode("xyh"), (Ids{259, 0, 0, 260}));
  j["model"]["unk_token"] = nullptr;
  auto r = load(j).encode("hex");
  ASSERT_FALSE(r.ok());
  EXPECT_MESSAGE(r.error().message,
                 "the character 'x' (U+0078) has no token, and the tokenizer has neither byte_fallback nor an unk_token");
}

TEST(SentencePieceStyle, AddedTokensAreCutOutBeforeTheNormalizer) {
  const BpeTokenizer t = load(llama2Style());
  // Each stretch after an added token gets its own Prepend "▁", as Hugging Face's does.
  EXPECT_EQ(*t.encode("<s>hello</s>hello"), (Ids{1, 272, 2, 272}));
  EXPECT_EQ(*t.decode({1, 272, 2, 272}), "<s> hello</s> hello");
  EXPECT_TRUE(t.isSpecial(2));
  // A token marked "normalized" is matched in the normalized text, where the space is "▁".
  json j = llama2Style();
  j["added_tokens"].push_back({{"id", 275}, {"content", marked("_x")}, {"normalized", true}, {"special", false}});
  const BpeTokenizer n = load(j);
  EXPECT_EQ(*n.encode("h x"), (Ids{268, 275}));
  j["added_tokens"][3]["normalized"] = false;
  EXPECT_EQ(*load(j).encode("h x"), (Ids{268, 259, byteId('x')}));
}

TEST(SentencePieceStyle, DecodingGivesTheTextBack) {
  const BpeTokenizer t = load(llama2Style());
  for (const std::string text : {"hello world", " hello", "  hello  ", "h\xC3\xA9 \xE4\xB8\xAD\xF0\x9F\x98\x80", "a\n\nb\t", "x"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(*t.decode(*t.encode(text)), text);
  }
  EXPECT_EQ(*t.decode({byteId(0xE4)}), "\xEF\xBF\xBD");  // one byte of 中 alone
  json j = llama2Style();
  j["decoder"]["decoders"][3]["stop"] = 2;
  EXPECT_EQ(*load(j).decode({272, 273, 273}), "hello  ");  // two of the four trailing spaces
}

TEST(SentencePieceStyle, MetaspacePrependSchemes) {
  const BpeTokenizer first = load(metaspaceStyle("first", true));
  EXPECT_EQ(first.describe().find("SentencePiece-style BPE"), 0u);
  EXPECT_EQ(*first.encode("hello world"), (Ids{272, 259, 264, 263, 265, 262, 266}));
  EXPECT_EQ(*first.encode("<s>hello"), (Ids{1, 260, 269, 271}));  // not the text's start: no ▁
  EXPECT_EQ(*first.decode(*first.encode("hello world")), "hello world");
  const BpeTokenizer always = load(metaspaceStyle("always", true));
  EXPECT_EQ(*always.encode("<s>hello"), (Ids{1, 272}));
  EXPECT_EQ(*always.encode(" hello"), (Ids{272}));  // already starts with ▁: none added
  const BpeTokenizer never = load(metaspaceStyle("never", true));
  EXPECT_EQ(*never.encode("hello"), (Ids{260, 269, 271}));
  EXPECT_EQ(*never.decode({272}), " hello");  // nothing to strip
  EXPECT_EQ(*first.encode(" hello"), (Ids{272}));  // the space is the ▁: none prepended
  // split: each piece starts at a ▁, so "▁hello▁▁" is "▁hello" + "▁" + "▁"; unsplit, ▁▁ merges.
  EXPECT_EQ(*first.encode("hello  "), (Ids{272, 259, 259}));
  EXPECT_EQ(*load(metaspaceStyle("first", false)).encode("hello  "), (Ids{272, 273}));
  // Older files: add_prefix_space instead of prepend_scheme.
  json old = metaspaceStyle("first", true);
  old["pre_tokenizer"].erase("prepend_scheme");
  old["pre_tokenizer"]["add_prefix_space"] = false;
  EXPECT_EQ(*load(old).encode("hello"), (Ids{260, 269, 271}));
}

TEST(SentencePieceStyle, IgnoreMergesTakesWholePieces) {
  json j = metaspaceStyle("first", true);
  EXPECT_EQ(*load(j).encode("world"), (Ids{259, 264, 263, 265, 262, 266}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(*load(j).encode("world"), (Ids{274}));
}

TEST(SentencePieceStyle, GemmaLayoutSplitsOnTheSpaceItHasReplaced) {
  // Gemma's tokenizer.json: Replace " " → "▁" without Prepend, then a Split on " " that the
  // replaced text no longer holds; no Strip.
  json j = llama2Style();
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMark}};
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}};
  j["decoder"]["decoders"].erase(3);
  const BpeTokenizer t = load(j);
  EXPECT_EQ(*t.encode("hello"), (Ids{260, 269, 271}));
  EXPECT_EQ(*t.encode(" hello"), (Ids{272}));
  EXPECT_EQ(*t.decode({272}), " hello");
}

TEST(SplitByText, Behaviors) {
  auto pieces = [](std::string_view text, std::string_view pattern, SplitBehavior b) {
    std::vector<std::string> out;
    for (const auto& [s, e] : splitByText(text, pattern, b)) out.emplace_back(text.substr(s, e - s));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("a  b ", " ", SplitBehavior::Removed), (V{"a", "b"}));
  EXPECT_EQ(pieces("a  b ", " ", SplitBehavior::Isolated), (V{"a", " ", " ", "b", " "}));
  EXPECT_EQ(pieces("a  b ", " ", SplitBehavior::MergedWithPrevious), (V{"a ", " ", "b "}));
  EXPECT_EQ(pieces(" a  b", " ", SplitBehavior::MergedWithNext), (V{" a", " ", " b"}));
  EXPECT_EQ(pieces("a  b ", " ", SplitBehavior::Contiguous), (V{"a", "  ", "b", " "}));
  EXPECT_EQ(pieces("abab", "ab", SplitBehavior::Isolated), (V{"ab", "ab"}));
  EXPECT_EQ(pieces("xyz", " ", SplitBehavior::MergedWithNext), (V{"xyz"}));
  EXPECT_TRUE(pieces("", " ", SplitBehavior::Isolated).empty());
}

TEST(SentencePieceStyle, MistakesInTheFileAreNamed) {
  json j = llama2Style();
  j["model"]["vocab"].erase("<0x41>");
  EXPECT_MESSAGE(spError(j), "t.json: model.byte_fallback is true, but the vocabulary has no token '<0x41>' "
                               "(byte fallback needs all 256, <0x00> … <0xFF>)");
  j = llama2Style();
  j["model"]["unk_token"] = "<unknown>";
  EXPECT_MESSAGE(spError(j), "t.json: model.unk_token '<unknown>' is not in the vocabulary");
  j["model"]["unk_token"] = 0;
  EXPECT_MESSAGE(spError(j), "t.json: model.unk_token is number 0, expected a token or null");
  // Byte-level BPE never uses it: a name it does not hold is no error there.
  json byteLevel = json::parse(testing::readAll(testing::fixture("llama_style/tokenizer.json")));
  byteLevel["model"]["unk_token"] = "<unknown>";
  EXPECT_EQ(spError(byteLevel), "(loaded)");
  j = llama2Style();
  j["model"]["fuse_unk"] = "yes";
  EXPECT_MESSAGE(spError(j), "t.json: model.fuse_unk is string, expected true or false");
  j = llama2Style();
  j.erase("decoder");
  EXPECT_MESSAGE(spError(j), "t.json: decoder is missing");
  j = llama2Style();
  j["decoder"]["decoders"][0]["content"] = "_";
  EXPECT_MESSAGE(spError(j), "t.json: decoder.decoders[0]: Replace '▁' → '_' is not supported");
  j = llama2Style();
  std::swap(j["decoder"]["decoders"][1], j["decoder"]["decoders"][3]);
  EXPECT_MESSAGE(spError(j), "t.json: decoder.decoders[2] 'Fuse' comes out of order");
  j = llama2Style();
  j["decoder"]["decoders"][3]["start"] = "1";
  EXPECT_MESSAGE(spError(j), "t.json: decoder.decoders[3].start is '1', expected a count 0 … 64");
  j = llama2Style();
  j["decoder"]["decoders"][2] = {{"type", "CTC"}};
  EXPECT_MESSAGE(spError(j), "t.json: decoder.decoders[2] 'CTC' is not supported");
  j = llama2Style();
  j["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", "\\s"}};
  EXPECT_MESSAGE(spError(j), "t.json: normalizer.normalizers[1].pattern {\"Regex\":\"\\\\s\"} is not supported (only a Replace of a text)");
  j = llama2Style();
  j["normalizer"]["normalizers"][0].erase("prepend");
  EXPECT_MESSAGE(spError(j), "t.json: normalizer.normalizers[0].prepend is missing");
  j = llama2Style();
  j["normalizer"]["normalizers"][1]["content"] = 5;
  EXPECT_MESSAGE(spError(j), "t.json: normalizer.normalizers[1].content is number 5, expected a string");
  j = metaspaceStyle("sometimes", true);
  EXPECT_MESSAGE(spError(j), "t.json: pre_tokenizer.prepend_scheme is 'sometimes', expected \"always\", \"first\" or \"never\"");
  j = metaspaceStyle("first", true);
  j["pre_tokenizer"]["replacement"] = "ab";
  EXPECT_MESSAGE(spError(j), "t.json: pre_tokenizer.replacement 'ab' is not one character");
  j = metaspaceStyle("first", true);
  j["pre_tokenizer"]["split"] = 1;
  EXPECT_MESSAGE(spError(j), "t.json: pre_tokenizer.split is number, expected true or false");
  j = metaspaceStyle("first", true);
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", {j["pre_tokenizer"], {{"type", "ByteLevel"}, {"add_prefix_space", false}}}}};
  EXPECT_MESSAGE(spError(j), "t.json: pre_tokenizer has both Metaspace and ByteLevel steps");
}

}  // namespace
}  // namespace mhascope::tokenize
