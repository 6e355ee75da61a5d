// A text through a Hugging Face model folder's own tokenizer: the one way every command and the
// window turn a model's text into token ids. The text is given verbatim (newlines, tabs and '|'
// are text, not batch separators; nothing is trimmed); a BOS is put first only when the
// tokenizer's post-processor template asks for one, as Hugging Face's tokenizer does by default.
// GUI-free: it links mhascope_model and mhascope_tokenize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model/model_folder.hpp"
#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/tokenizer_files.hpp"
#include "util/result.hpp"

namespace mhascope {

struct ModelText {
  model::ModelFolder folder;
  std::shared_ptr<const tokenize::BpeTokenizer> tokenizer;  // never null in a returned ModelText
  std::string tokenizerFiles;       // "tokenizer.json" or "vocab.json + merges.txt"
  std::string text;                 // as given
  std::vector<int> ids;             // (T) what the model reads, BOS first when added
  std::vector<std::string> labels;  // (T) the tokens as shown: spaces drawn as '␣'
  bool bos = false;                 // the tokenizer's template put a BOS first
  // Empty, or what was done to a text that is not valid UTF-8: "the text is not valid UTF-8: its
  // ill-formed bytes were read as U+FFFD (the first at byte 3)"; every command and view says it.
  std::string textNote;
};

// Model folders' tokenizers, kept for the next text of the same folder: the window's jobs (the
// pipeline's, the Model tab's, the Circuits tab's) load a folder's tokenizer once between them,
// not once per job and edit. A tokenizer is recognised by its folder and its files' identity
// (tokenizer.json, vocab.json, merges.txt: device, inode, size, modification time), so a changed
// file is read anew. Thread-safe (a second job asking for the same folder waits for the first
// one's load); the newest kTokenizers are kept.
class TokenizerCache {
 public:
  static constexpr std::size_t kTokenizers = 4;
  // tokenize::loadTokenizer(dir, limits), or the one loaded before from the same unchanged files.
  Result<std::shared_ptr<const tokenize::BpeTokenizer>> load(const std::string& dir, const tokenize::TokenizerLimits& limits = {});
  std::size_t loads() const;  // tokenizers read from files so far

 private:
  struct Entry {
    std::string dir, identity;
    std::shared_ptr<const tokenize::BpeTokenizer> tokenizer;
  };
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // newest first
  std::size_t loads_ = 0;
};

// The ids a model reads for `text` through `tokenizer`: the BOS its post-processor template asks
// for first (bos true), then the text's. A text that gives no tokens is refused, naming `where`.
struct TextIds {
  std::vector<int> ids;  // (T)
  bool bos = false;
};
Result<TextIds> textIdsForModel(const tokenize::BpeTokenizer& tokenizer, std::string_view text, const std::string& where);

// textNote for `text` read as `where` (empty when the text is valid UTF-8).
std::string invalidUtf8Note(std::string_view text, const std::string& where);

// The folder (or its config.json), its tokenizer and the ids of `text`. `where` names the text in
// messages ("--text", "--text-file 'a.txt'", "the text"). One line for each way this can fail:
// an empty text, no tokenizer, no tokens, more tokens than the model has positions, an id outside
// the vocabulary. `tokenizers` (may be null): where the tokenizer is taken from and kept.
// The tokenizer is held to the model's vocab_size and to `memoryBudgetBytes` (0: the default
// budget) before it is built (tokenize::TokenizerLimits).
Result<ModelText> tokenizeForModel(const std::string& modelPath, std::string text, const std::string& where,
                                   TokenizerCache* tokenizers = nullptr, std::uint64_t memoryBudgetBytes = 0);

// readModelText and modelTextWhere (the command line's text) are declared in model_source.hpp,
// which names no tokenizer type.

// The folder, its tokenizer and the command line's text (readModelText + tokenizeForModel).
Result<ModelText> loadModelText(const std::string& modelPath, const std::optional<std::string>& text,
                                const std::string& textFile, std::uint64_t memoryBudgetBytes = 0);

// "BOS '<|begin_of_text|>' first, as the tokenizer's template asks" or "no BOS: …".
std::string bosNote(const ModelText& mt);

// An experiment's answer token for this folder's tokenizer: "#123" is the id 123; otherwise `text` must encode to
// exactly one token (no BOS). Every message starts with `what` (the flag, or the window's field) and the text, and
// names the pieces a text of several tokens gave.
Result<int> answerTokenOf(const ModelText& mt, const std::string& what, const std::string& text);

// The config.json key that holds the layer count (or the positions), as the folder's family names it:
// "n_layer" for GPT-2, "num_hidden_layers" for Llama (likewise "n_positions", "max_position_embeddings").
const char* layersKey(const model::ModelSpec& s);
const char* positionsKey(const model::ModelSpec& s);

}  // namespace mhascope
