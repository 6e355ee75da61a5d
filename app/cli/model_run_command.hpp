// A Hugging Face model folder on the user's own text, headless:
//   run --model DIR --text "…" --layer L --dump OUT   layer L's attention stages, as `run --dump`
//                                                      writes them, plus token_ids.npy (1, T) int64
//                                                      (the model is built by the one model source,
//                                                      core/model_source; cli.cpp's cmdRun writes it)
// The text goes to the folder's tokenizer verbatim (newlines, tabs and '|' are text, not batch
// separators); a BOS is put first only when the tokenizer's post-processor template asks for one,
// as Hugging Face's tokenizer does by default (core/model_source/model_text.hpp). Options the folder
// decides (sizes, heads, positions, weights, masks, …) are refused in one line naming them.
#pragma once

#include <filesystem>
#include <string>

#include "attention/trace.hpp"
#include "model_source/model_source.hpp"

namespace mhascope::cli {

// `run --model … --dump DIR`: the layer's stages as `run --dump` writes them, trace.json with the
// model's own config block (folder, architecture, layer, text, BOS, positions, window) and
// token_ids.npy (1, T) int64. Returns the number of stage files.
Result<int> writeModelDump(const ModelLayerInfo& m, const Trace& t, const std::string& dumpDir,
                           const std::filesystem::path& target);
// "gpt2 model DIR, layer 1 (layers 0 .. 11), T = 57 tokens (no BOS: …), h = 12, N = 12 K/V heads":
// the dump's describe line and what `run` prints.
std::string modelDumpLine(const ModelLayerInfo& m);


}  // namespace mhascope::cli
