// GPT-2's two tokenizer files, read from bytes (untrusted): vocab.json (token → id) and merges.txt
// (one merge "a b" a line, by rank). Every refusal is one line that names the file, the place in it
// and the problem.
#include <algorithm>

#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/byte_level.hpp"
#include "tokenize/text_utf8.hpp"
#include "tokenize/tokenizer_load_common.hpp"

namespace mhascope::tokenize {

using namespace load_detail;

Result<BpeTokenizer> BpeTokenizer::fromVocabAndMerges(std::string_view vocabBytes, const std::string& vocabFile,
                                                      std::string_view mergesBytes, const std::string& mergesFile) {
  BpeTokenizer t;
  auto vocab = parseJson(vocabBytes, vocabFile);
  if (!vocab) return vocab.error();
  std::unordered_map<std::int32_t, std::string> idToSpelling;
  if (auto st = readVocab(*vocab, vocabFile, t.vocab_, idToSpelling); !st) return st.error();
  for (auto& [id, spelling] : idToSpelling) {
    Entry e;
    e.bytes = vocabTextToBytes(spelling);
    // GPT-2's own tokenizer treats "<|endoftext|>" as a special token, never split into pieces.
    const bool special = spelling.size() > 4 && spelling.compare(0, 2, "<|") == 0 &&
                         spelling.compare(spelling.size() - 2, 2, "|>") == 0;
    if (special) {
      e.special = e.added = true;
      e.bytes = spelling;
      t.added_.push_back(AddedToken{id, spelling, true});
    }
    e.text = std::move(spelling);
    t.entries_.emplace(id, std::move(e));
  }
  std::sort(t.added_.begin(), t.added_.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });

  if (auto st = checkFileSize(mergesBytes, mergesFile); !st) return st.error();
  if (!isValidUtf8(mergesBytes)) return makeError(mergesFile + ": not UTF-8 text");
  std::size_t lineNo = 0;
  std::size_t pos = 0;
  while (pos < mergesBytes.size()) {
    std::size_t end = mergesBytes.find('\n', pos);
    if (end == std::string_view::npos) end = mergesBytes.size();
    std::string_view line = mergesBytes.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // written on Windows
    if (lineNo == 1 && line.substr(0, 8) == "#version") continue;
    const std::string where = mergesFile + " line " + std::to_string(lineNo);
    auto pair = mergePair(line, where);
    if (!pair) return pair.error();
    if (t.merges_.size() >= kMaxMerges) {
      return makeError(mergesFile + ": more than " + std::to_string(kMaxMerges) + " merges");
    }
    if (auto st = t.addMerge(pair->first, pair->second, where); !st) return st.error();
  }
  t.steps_.push_back(PreTokenizerStep{});  // GPT-2: ByteLevel with its regex, no prefix space
  if (auto st = t.finish(vocabFile); !st) return st.error();
  return t;
}

}  // namespace mhascope::tokenize
