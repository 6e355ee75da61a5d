// Shared by the tokenizer tests: the fixture folder and whole-file reads.
#pragma once

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

// The GPT-2 vocabulary, loaded once per test binary run would be shared state; each test that
// needs it loads it (≈0.2 s), which keeps the tests independent.
inline BpeTokenizer gpt2() {
  auto t = BpeTokenizer::fromVocabAndMerges(readAll(fixture("gpt2/vocab.json")), "vocab.json",
                                            readAll(fixture("gpt2/merges.txt")), "merges.txt");
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

}  // namespace mhascope::tokenize::testing
