// Reading a tokenizer from a model folder: tokenizer.json when it is there, else GPT-2's
// vocab.json + merges.txt. Each file's size is checked before it is read (at most
// kMaxTokenizerFileBytes), so a huge or special file is refused without being loaded.
#pragma once

#include <string>

#include "tokenize/bpe_tokenizer.hpp"
#include "util/result.hpp"

namespace mhascope::tokenize {

// `path` is the model folder or a tokenizer.json file.
Result<BpeTokenizer> loadTokenizer(const std::string& path);
// The whole file as bytes, refused above `maxBytes` with both sizes in the message.
Result<std::string> readTokenizerFile(const std::string& path, std::size_t maxBytes);

}  // namespace mhascope::tokenize
