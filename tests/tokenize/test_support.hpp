// Shared by the tokenizer tests: the fixture folder, whole-file reads, the first difference of two id lists.
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/tokenizer_files.hpp"

namespace mhascope::tokenize::testing {

inline std::string fixture(const std::string& name) { return std::string(MHASCOPE_TOKENIZER_FIXTURES) + "/" + name; }

inline std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "first difference at token 3: got 15, reference 16" (empty when equal).
inline std::string firstMismatch(const std::vector<std::int32_t>& got, const std::vector<std::int32_t>& want) {
  for (std::size_t k = 0; k < std::max(got.size(), want.size()); ++k) {
    const std::string g = k < got.size() ? std::to_string(got[k]) : "(end)";
    const std::string w = k < want.size() ? std::to_string(want[k]) : "(end)";
    if (g != w) return "first difference at token " + std::to_string(k) + ": got " + g + ", reference " + w;
  }
  return "";
}

// The GPT-2 vocabulary, loaded once per test binary run would be shared state; each test that
// needs it loads it (≈0.2 s), which keeps the tests independent.
inline BpeTokenizer gpt2() {
  auto t = BpeTokenizer::fromVocabAndMerges(readAll(fixture("gpt2/vocab.json")), "vocab.json",
                                            readAll(fixture("gpt2/merges.txt")), "merges.txt");
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

}  // namespace mhascope::tokenize::testing
