// Reading a tokenizer from a model folder: tokenizer.json when it is there, else GPT-2's
// vocab.json + merges.txt. Each file's size is checked before it is read (at most
// kMaxTokenizerFileBytes), so a huge or special file is refused without being loaded.
#pragma once

#include <cstdint>
#include <string>

#include "tokenize/bpe_tokenizer.hpp"
#include "util/result.hpp"

namespace mhascope::tokenize {

// What a model asks of its tokenizer before it is built.
struct TokenizerLimits {
  // > 0: the model's vocab_size V. A vocabulary (tokenizer.json's model.vocab, vocab.json) of more
  // than 2·V + 256 entries is not this model's: refused after a counting pass over the file,
  // before it is built.
  std::int64_t vocab = 0;
  // > 0: the memory budget. Reading and building the tokenizer is refused before the file is read
  // when estimateTokenizerBytes of its size is above it.
  std::uint64_t memoryBudgetBytes = 0;
};

// The bytes reading and building a tokenizer from files of `fileBytes` bytes in all holds at its
// peak: the file, the parsed document and the tables (measured on real and generated files: see
// tokenizer_files.cpp).
std::uint64_t estimateTokenizerBytes(std::uint64_t fileBytes);

// Whether the folder holds the files loadTokenizer reads (tokenizer.json, or vocab.json +
// merges.txt), without reading them.
bool hasTokenizerFiles(const std::string& dir);
// `path` is the model folder or a tokenizer.json file.
Result<BpeTokenizer> loadTokenizer(const std::string& path, const TokenizerLimits& limits = {});
// The whole file as bytes, refused above `maxBytes` with both sizes in the message.
Result<std::string> readTokenizerFile(const std::string& path, std::size_t maxBytes);

}  // namespace mhascope::tokenize
