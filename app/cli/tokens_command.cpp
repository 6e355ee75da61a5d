// `mhascope tokens --model DIR | --tokenizer FILE --text …`: how a tokenizer reads a text, before
// any model runs — each token's position, id, its piece (the vocabulary's spelling: "▁Hello",
// "Ġworld", "<0xF0>") and what it reads as ("␣Hello"), then the count. With --model the ids are
// exactly what the model reads (the BOS its template asks for, the checks against its vocabulary
// and positions: model_text.hpp); with --tokenizer a tokenizer.json (or a folder holding one, or
// vocab.json + merges.txt) on its own, its template's BOS first likewise.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attention/tokenizer.hpp"  // utf8Length
#include "command_common.hpp"
#include "commands.hpp"
#include "model_source/model_source.hpp"
#include "model_source/model_text.hpp"
#include "options.hpp"
#include "tokenize/byte_level.hpp"
#include "tokenize/tokenizer_files.hpp"
#include "util/memory_budget.hpp"
#include "util/utf8.hpp"

namespace mhascope::cli {
namespace {

struct TokensArgs {
  std::string modelDir;
  std::string tokenizerPath;
  std::optional<std::string> text;
  std::string textFile;
  std::string json;
  bool force = false;
};

// A tokenizer and the ids of the text, from whichever of --model and --tokenizer was given.
struct TokenizedText {
  std::shared_ptr<const tokenize::BpeTokenizer> tokenizer;
  std::string source;  // "model folder 'DIR'" or "'FILE'"
  std::string text;
  std::vector<int> ids;
  bool bos = false;
  std::string textNote;
  std::vector<std::pair<std::string, std::string>> inputs;  // (flag, path) of every file read
};

Result<TokenizedText> tokenizeArgs(const TokensArgs& a) {
  TokenizedText out;
  if (!a.modelDir.empty()) {
    auto mt = loadModelText(a.modelDir, a.text, a.textFile);
    if (!mt) return mt.error();
    out.tokenizer = mt->tokenizer;
    out.source = "model folder '" + mt->folder.dir() + "' (" + mt->tokenizerFiles + ")";
    out.text = std::move(mt->text);
    out.ids = std::move(mt->ids);
    out.bos = mt->bos;
    out.textNote = std::move(mt->textNote);
    out.inputs = modelFolderFiles(mt->folder.dir());
  } else {
    auto text = readModelText(a.text, a.textFile);
    if (!text) return makeError(text.error().message);
    const std::string where = modelTextWhere(a.textFile);
    if (text->empty()) return makeError(where + " is empty: enter at least one token");
    auto tok = tokenize::loadTokenizer(a.tokenizerPath, {0, defaultMemoryBudget()});
    if (!tok) return tok.error();
    out.tokenizer = std::make_shared<const tokenize::BpeTokenizer>(std::move(*tok));
    out.source = "'" + a.tokenizerPath + "'";
    out.textNote = invalidUtf8Note(*text, where);
    out.text = std::move(*text);
    auto ids = textIdsForModel(*out.tokenizer, out.text, where);
    if (!ids) return ids.error();
    out.ids = std::move(ids->ids);
    out.bos = ids->bos;
    out.inputs.push_back({"--tokenizer", a.tokenizerPath});
  }
  if (!a.textFile.empty()) out.inputs.push_back({"--text-file", a.textFile});
  return out;
}

int cmdTokens(const TokensArgs& a) {
  if (a.modelDir.empty() == a.tokenizerPath.empty()) {
    return fail(a.modelDir.empty() ? "tokens needs a tokenizer: --model DIR or --tokenizer FILE"
                                   : "--model and --tokenizer both give the tokenizer; keep one");
  }
  auto tt = tokenizeArgs(a);
  if (!tt) return fail(tt.error().message);
  if (!tt->textNote.empty()) warn(tt->textNote);
  if (!a.json.empty()) {
    if (auto st = checkJsonOutput(a.json, a.force, tt->inputs); !st) return fail(st.error().message);
    if (!a.modelDir.empty()) {
      if (auto st = refuseInsideModelFolder("--json", a.json, a.modelDir); !st) return fail(st.error().message);
    }
  }
  const tokenize::BpeTokenizer& tok = *tt->tokenizer;
  const std::size_t T = tt->ids.size();

  std::printf("tokenizer: %s\n  %s\n", replaceInvalidUtf8(tt->source).c_str(), tok.describe().c_str());
  std::printf("text: %zu bytes; %s\n\n", tt->text.size(),
              tt->bos ? ("the BOS '" + tok.displayToken(tt->ids.front()) + "' first, as the tokenizer's template asks").c_str()
                      : "no BOS: the tokenizer's template adds none");
  // The piece is the vocabulary's spelling with control characters escaped; "reads as" is the
  // text the token stands for ('␣' a space, "<0xF0>" one byte of a character cut between tokens).
  constexpr std::size_t kPiece = 24;
  std::printf("  %8s %8s  %s %s\n", "position", "id", cell("piece", kPiece).c_str(), "reads as");
  for (std::size_t t = 0; t < T; ++t) {
    const int id = tt->ids[t];
    const std::string piece = tokenize::visibleToken(tok.tokenText(id).value_or(""));
    // A piece longer than its column is printed whole, the next column after it.
    const std::string shown = utf8Length(piece) < kPiece ? cell(piece, kPiece) : piece + " ";
    std::printf("  %8zu %8d  %s %s%s\n", t, id, shown.c_str(), tok.displayToken(id).c_str(),
                tok.isSpecial(id) ? "  (special)" : "");
  }
  std::printf("%zu %s\n", T, T == 1 ? "token" : "tokens");

  if (!a.json.empty()) {
    nlohmann::json tokens = nlohmann::json::array();
    for (std::size_t t = 0; t < T; ++t) {
      const int id = tt->ids[t];
      tokens.push_back({{"position", t},
                        {"id", id},
                        {"piece", replaceInvalidUtf8(tok.tokenText(id).value_or(""))},
                        {"bytes", replaceInvalidUtf8(tok.tokenBytes(id).value_or(""))},
                        {"special", tok.isSpecial(id)}});
    }
    const nlohmann::json doc = {{"tokenizer", replaceInvalidUtf8(tt->source)}, {"kind", tok.describe()},
                                {"text", replaceInvalidUtf8(tt->text)}, {"bos", tt->bos}, {"count", T},
                                {"tokens", tokens}};
    if (auto st = writeOutputFile(a.json, doc.dump(2) + "\n", "\n"); !st) return fail(st.error().message);
  }
  return 0;
}

}  // namespace

CommandRun addTokensCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<TokensArgs>();
  auto* model = cmd.add_option("--model", a->modelDir, "a Hugging Face model folder: the ids exactly as the model reads them")
                    ->check(nonEmptyPath());
  cmd.add_option("--tokenizer", a->tokenizerPath, "a tokenizer.json (or a folder with tokenizer.json or vocab.json + "
                 "merges.txt) on its own")
      ->check(nonEmptyPath())
      ->excludes(model);
  auto* text = cmd.add_option("--text", a->text, "the text, verbatim (newlines, tabs and '|' are text)");
  cmd.add_option("--text-file", a->textFile, "read the text from this file, verbatim")->check(nonEmptyPath())->excludes(text);
  cmd.add_option("--json", a->json, "also write the tokens to this file")->check(nonEmptyPath());
  cmd.add_flag("--force", a->force, "replace an existing --json file");
  return [a](CommandContext&) { return cmdTokens(*a); };
}

}  // namespace mhascope::cli
