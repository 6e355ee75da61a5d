// A text through a model folder's tokenizer (see model_text.hpp).
#include "model_source/model_text.hpp"
#include "util/memory_budget.hpp"
#include "util/utf8.hpp"

#include <filesystem>
#include <utility>

#include "io/file_io.hpp"
#include "model/families/family.hpp"
#include "model_source/model_source.hpp"
#include "tokenize/tokenizer_files.hpp"

namespace mhascope {

const char* layersKey(const model::ModelSpec& s) { return s.family->key(model::SpecField::Layers); }
const char* positionsKey(const model::ModelSpec& s) { return s.family->key(model::SpecField::MaxPositions); }

std::string modelTextWhere(const std::string& textFile) {
  return textFile.empty() ? "--text" : "--text-file '" + textFile + "'";
}

Result<std::string> readModelText(const std::optional<std::string>& text, const std::string& textFile) {
  if (!text && textFile.empty()) return makeError("--model needs the text: --text \"...\" or --text-file FILE");
  if (text && !textFile.empty()) return makeError("--text and --text-file both give the text; keep one");
  if (text) return *text;
  auto bytes = readFile(textFile, tokenize::kMaxTextBytes);
  if (!bytes) return makeError("--text-file: " + bytes.error().message);
  return std::move(*bytes);
}

namespace {

// The tokenizer files of `dir` as the file system sees them now ("-" for one that is absent).
std::string tokenizerFilesIdentity(const std::string& dir) {
  std::string out;
  for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt"}) {
    out += fileIdentity((std::filesystem::path(dir) / name).string()) + "\n";
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const tokenize::BpeTokenizer>> TokenizerCache::load(const std::string& dir,
                                                                          const tokenize::TokenizerLimits& limits) {
  const std::string identity = tokenizerFilesIdentity(dir);
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->dir == dir && it->identity == identity) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front().tokenizer;
    }
  }
  auto tok = tokenize::loadTokenizer(dir, limits);
  ++loads_;
  if (!tok) return tok.error();  // not kept: the folder may get its files
  auto shared = std::make_shared<const tokenize::BpeTokenizer>(std::move(*tok));
  entries_.push_front(Entry{dir, identity, shared});
  if (entries_.size() > kTokenizers) entries_.pop_back();
  return shared;
}

std::size_t TokenizerCache::loads() const {
  std::lock_guard lock(mutex_);
  return loads_;
}

std::string invalidUtf8Note(std::string_view text, const std::string& where) {
  const std::size_t bad = firstInvalidUtf8(text);
  if (bad == std::string_view::npos) return "";
  return where + " is not valid UTF-8: its ill-formed bytes are read as U+FFFD, the replacement character (the "
                 "first at byte " + std::to_string(bad) + ")";
}

Result<TextIds> textIdsForModel(const tokenize::BpeTokenizer& tokenizer, std::string_view text, const std::string& where) {
  auto ids = tokenizer.encode(text);
  if (!ids) return ids.error();
  if (ids->empty()) return makeError(where + " gives no tokens: enter at least one token");
  TextIds out;
  if (const auto bos = tokenizer.bosToken()) {
    out.ids.push_back(*bos);
    out.bos = true;
  }
  out.ids.insert(out.ids.end(), ids->begin(), ids->end());
  return out;
}

Result<ModelText> tokenizeForModel(const std::string& modelPath, std::string text, const std::string& where,
                                   TokenizerCache* tokenizers, std::uint64_t memoryBudgetBytes) {
  auto folder = model::ModelFolder::open(modelPath);
  if (!folder) return folder.error();
  ModelText mt{std::move(*folder), {}, {}, std::move(text), {}, {}, false, {}};
  mt.textNote = invalidUtf8Note(mt.text, where);
  if (mt.text.empty()) return makeError(where + " is empty: enter at least one token");
  Result<std::shared_ptr<const tokenize::BpeTokenizer>> tok = makeError("");
  const tokenize::TokenizerLimits limits{mt.folder.spec().vocab,
                                         memoryBudgetBytes > 0 ? memoryBudgetBytes : defaultMemoryBudget()};
  if (tokenizers) {
    tok = tokenizers->load(mt.folder.dir(), limits);
  } else if (auto own = tokenize::loadTokenizer(mt.folder.dir(), limits)) {
    tok = std::make_shared<const tokenize::BpeTokenizer>(std::move(*own));
  } else {
    tok = own.error();
  }
  if (!tok) {
    return makeError(tok.error().message + "; the text needs the model's own tokenizer beside its config.json");
  }
  mt.tokenizer = std::move(*tok);
  std::error_code ec;
  mt.tokenizerFiles = std::filesystem::exists(std::filesystem::path(mt.folder.dir()) / "tokenizer.json", ec)
                          ? "tokenizer.json"
                          : "vocab.json + merges.txt";
  auto ids = textIdsForModel(*mt.tokenizer, mt.text, where);
  if (!ids) return ids.error();
  mt.ids = std::move(ids->ids);
  mt.bos = ids->bos;
  const model::ModelSpec& s = mt.folder.spec();
  const std::int64_t T = static_cast<std::int64_t>(mt.ids.size());
  // A learned table (GPT-2's) has no row past n_positions; RoPE models are held to their declared
  // context too, where they were trained.
  if (T > s.maxPositions) {
    return makeError(where + " is " + std::to_string(T) + " tokens" + (mt.bos ? " (with the BOS)" : "") +
                     ", more than the model's " + std::to_string(s.maxPositions) + " positions (" +
                     positionsKey(s) + " in " + mt.folder.dir() + "/config.json); shorten the text");
  }
  for (std::size_t i = 0; i < mt.ids.size(); ++i) {
    if (mt.ids[i] >= s.vocab) {
      return makeError("the tokenizer gives token id " + std::to_string(mt.ids[i]) + " ('" +
                       mt.tokenizer->displayToken(mt.ids[i]) + "', position " + std::to_string(i) +
                       "), outside the model's vocabulary of " + std::to_string(s.vocab) + " (vocab_size in " +
                       mt.folder.dir() + "/config.json): the tokenizer is not this model's" +
                       (mt.textNote.empty() ? "" : " (" + mt.textNote + ")"));
    }
  }
  for (int id : mt.ids) mt.labels.push_back(mt.tokenizer->displayToken(id));
  return mt;
}

Result<ModelText> loadModelText(const std::string& modelPath, const std::optional<std::string>& text,
                                const std::string& textFile, std::uint64_t memoryBudgetBytes) {
  auto t = readModelText(text, textFile);
  if (!t) return t.error();
  return tokenizeForModel(modelPath, std::move(*t), modelTextWhere(textFile), nullptr, memoryBudgetBytes);
}

std::string bosNote(const ModelText& mt) {
  return mt.bos ? "BOS '" + mt.labels.front() + "' first, as the tokenizer's template asks"
                : "no BOS: the tokenizer's template adds none";
}

Result<int> answerTokenOf(const ModelText& mt, const std::string& what, const std::string& text) {
  const int V = mt.folder.spec().vocab;
  if (!text.empty() && text[0] == '#') {
    const std::string digits = text.substr(1);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) {
      return makeError(what + " '" + text + "': after '#' give a token id (digits only)");
    }
    const int id = std::stoi(digits);
    if (id >= V) {
      return makeError(what + " '" + text + "': token id " + digits + " is outside the vocabulary of " + std::to_string(V));
    }
    return id;
  }
  auto ids = mt.tokenizer->encode(text);
  if (!ids) return makeError(what + " '" + text + "': " + ids.error().message);
  if (ids->size() == 1) return static_cast<int>((*ids)[0]);
  std::string pieces;
  for (auto id : *ids) pieces += (pieces.empty() ? "'" : " '") + mt.tokenizer->displayToken(id) + "'";
  return makeError(what + " '" + text + "' is " + std::to_string(ids->size()) + " tokens for this tokenizer" +
                   (pieces.empty() ? "" : " (" + pieces + ")") +
                   ": give a text of one token (a leading space is part of a word's token: ' Mary'), or its id as #123");
}

}  // namespace mhascope
