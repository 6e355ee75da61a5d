// libFuzzer target for the BPE tokenizer. The first byte picks what the rest is:
//   0  a tokenizer.json            1  vocab.json, a NUL byte, merges.txt
//   2  text for two fixed tokenizers (GPT-2's regex, and a Llama-3-shaped Split + ByteLevel)
// Files must load or give an Error that starts with the file's name — never a crash, an
// out-of-bounds read or undefined behaviour. Whatever byte-level tokenizer loads must encode
// text, and every encoding must decode back to its text (with ill-formed UTF-8 replaced by
// U+FFFD). A SentencePiece-style one may refuse a character it has no token for, and its decoding
// is the text only as far as its normalizer and decoder agree (a Prepend without a Strip adds a
// space): its ids must decode, nothing more.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/byte_level.hpp"
#include "util/utf8.hpp"

namespace {

using mhascope::tokenize::BpeTokenizer;

// Built once before fuzzing: libFuzzer's entry point has no other place to keep them.
std::unique_ptr<BpeTokenizer> gGpt2Like;
std::unique_ptr<BpeTokenizer> gLlamaLike;

std::string byteVocabJson(const char* extra) {
  std::string v = "{";
  for (unsigned b = 0; b < 256; ++b) {
    std::string spelled = mhascope::tokenize::bytesToVocabText(std::string(1, static_cast<char>(b)));
    if (spelled == "\"" || spelled == "\\") spelled = "\\" + spelled;
    v += "\"" + spelled + "\": " + std::to_string(b) + ", ";
  }
  return v + extra + "}";
}

void checkRoundTrip(const BpeTokenizer& t, std::string_view text) {
  auto ids = t.encode(text);
  if (!ids) {
    if (text.size() <= mhascope::tokenize::kMaxTextBytes) __builtin_trap();
    return;
  }
  auto back = t.decode(*ids);
  if (!back || *back != mhascope::replaceInvalidUtf8(text)) __builtin_trap();
  for (std::int32_t id : *ids) (void)t.displayToken(id);
}

bool startsWith(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string extra = "\"\xC4\xA0t\": 256, \"he\": 257, \"\xC4\xA0the\": 258, \"<|endoftext|>\": 259";
  auto gpt2 = BpeTokenizer::fromVocabAndMerges(byteVocabJson(extra.c_str()), "v.json",
                                               "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n", "m.txt");
  const std::string llama =
      "{\"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": " + byteVocabJson(extra.c_str()) +
      ", \"merges\": [[\"\xC4\xA0\", \"t\"], [\"h\", \"e\"], [\"\xC4\xA0t\", \"he\"]]},"
      " \"added_tokens\": [{\"id\": 300, \"content\": \"<|begin_of_text|>\", \"special\": true}],"
      " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\":"
      " \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
      "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false},"
      " {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}}";
  auto llamaLike = BpeTokenizer::fromTokenizerJson(llama, "llama.json");
  if (!gpt2 || !llamaLike) __builtin_trap();  // the fixed tokenizers themselves must load
  gGpt2Like = std::make_unique<BpeTokenizer>(std::move(*gpt2));
  gLlamaLike = std::make_unique<BpeTokenizer>(std::move(*llamaLike));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto t = BpeTokenizer::fromTokenizerJson(rest, "fuzz.json");
      if (!t) {
        if (!startsWith(t.error().message, "fuzz.json")) __builtin_trap();
        return 0;
      }
      const char* text = "Hello world, it's 12345 <|endoftext|> \xF0\x9F\x98\x80\n\n";
      if (t->byteLevel()) {
        checkRoundTrip(*t, text);
      } else if (auto ids = t->encode(text)) {
        if (!t->decode(*ids)) __builtin_trap();
        for (std::int32_t id : *ids) (void)t->displayToken(id);
      }
      break;
    }
    case 1: {
      const std::size_t nul = rest.find('\0');
      const std::string_view vocab = rest.substr(0, nul);
      const std::string_view merges = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
      auto t = BpeTokenizer::fromVocabAndMerges(vocab, "fuzz_vocab.json", merges, "fuzz_merges.txt");
      if (!t) {
        const std::string& m = t.error().message;
        if (!startsWith(m, "fuzz_vocab.json") && !startsWith(m, "fuzz_merges.txt")) __builtin_trap();
        return 0;
      }
      checkRoundTrip(*t, "Hello world, it's 12345 <|endoftext|> \xF0\x9F\x98\x80\n\n");
      break;
    }
    default:
      checkRoundTrip(*gGpt2Like, rest);
      checkRoundTrip(*gLlamaLike, rest);
      break;
  }
  return 0;
}
