// One model source for the command line and the window: a configuration (preset + settings)
// plus the files named in InputFiles (raw .npy inputs, .npy masks, .safetensors weights, a
// checkpoint layer, a layer of a Hugging Face model folder) → the engine's Model. The CLI's resolveModel (app/cli/model_options.cpp)
// and the window's compute worker (app/shell/compute_worker.cpp) both call modelFromSource, so
// the same files give the same model and the same messages (each names its file and flag).
// GUI-free: it links core, mhascope_train, mhascope_model and mhascope_tokenize.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "io/input_files.hpp"
#include "model/residual_cache.hpp"
#include "train/model.hpp"

namespace mhascope {

// What a model folder's layer was made from: the dump's token_ids.npy and trace.json, the
// window's token chips and subtitle.
struct ModelLayerInfo {
  std::string dir;            // the folder (a config.json path given is read as its folder)
  std::string architecture;   // config.json's model_type: "gpt2", "llama", "mistral", "qwen2"
  int layer = 0, layers = 0;  // layer l of L (0-based)
  bool layerGiven = false;    // false: no layer was named, layer 0 is shown
  int heads = 0, kvHeads = 0;
  // Latent attention (DeepSeek): every head's keys and values come from one latent of r numbers per token, beside
  // one rotary key of d_r shared by all heads; 0: the usual N K/V heads.
  int latentRank = 0, latentRopeDim = 0;
  bool rope = false;          // RoPE inside attention; false: GPT-2's learned positions
  int window = 0;             // Mistral's sliding window W (0: none)
  std::string text;           // as given, verbatim
  std::vector<int> ids;       // (T) token ids, BOS first when the tokenizer adds one
  std::vector<std::string> labels;  // (T) the tokens as shown ('␣' for a space)
  bool bos = false;
  std::string bosNote;        // "BOS '<s>' first, as the tokenizer's template asks" or "no BOS: …"
  std::string tokenizerFiles; // "tokenizer.json" or "vocab.json + merges.txt"
  std::string textNote;       // ModelText::textNote
};

// The model with the config it was built from (sizes and bias as the files decided them).
struct SourcedModel {
  ModelConfig config;
  Model model;
  bool seedUsed = true;      // false: neither embeddings nor weights came from config.seed
  std::string describeNote;  // appended to the summary, e.g. "; trained layer 1 of 2 (…)"
  std::shared_ptr<const ModelLayerInfo> modelLayer;  // set for a model folder's layer only
  // A latent-attention layer (DeepSeek), recorded by the model's own forward: `model` holds its inputs and options but
  // no W_q, W_k, W_v (it has none), so the layer's pass is this record, never the engine's re-run of `model`.
  std::shared_ptr<const Trace> recorded;
  // Set with `recorded`: why what re-runs the layer with changed weights or options (the lessons that re-run it,
  // edited scores, the weights to save) cannot, in one sentence naming the layer.
  std::string rerunRefusal;
};

class TokenizerCache;  // model_source/model_text.hpp

// What the window's jobs share about the model folders they run (either may be null: the command
// line has neither): their tokenizers, loaded once, and their residual streams, kept for the next
// forward of the same folder and text (model/residual_cache.hpp).
struct ModelCaches {
  std::shared_ptr<TokenizerCache> tokenizers;
  std::shared_ptr<model::ResidualCache> residuals;
};

struct ModelRequest {
  ModelConfig config;  // preset + settings; memoryBudgetBytes is the budget every file is read under
  InputFiles files;
  MemoryUse use;
  // The command line: d_model given explicitly (--d-model), checked against a --query file.
  std::optional<int> requiredDModel;
  // The window: a weights file sets d_model (its controls show it fixed) instead of having to
  // match the control. The command line keeps d_model from the options and checks the file.
  bool weightsDecideDModel = false;
  // A checkpoint's probe input: how many items and (text task) which text.
  int checkpointItems = 1;
  std::string checkpointText;
  // A model folder (files.model): its text is config.text, verbatim; `modelTextWhere` names it in
  // messages ("--text", "--text-file 'a.txt'"). The layers before files.layer run first:
  // `modelProgress` hears each one done (returning false stops, with the error "cancelled").
  std::string modelTextWhere = "the text";
  std::function<bool(int layersDone, int layers)> modelProgress;
  // Set (the window): the folder's tokenizer comes from caches.tokenizers, and the layers before
  // files.layer start from the streams earlier forwards of this folder and text kept in
  // caches.residuals, and keep theirs.
  ModelCaches caches;
  bool exportAllHeads = false;  // the command line's export --head all: h heatmaps in one picture
  // A model folder's layer described only (`info`: sizes, shapes, parameters, costs): the layers
  // before it are not run. The layer's weights and options are its own, but its inputs are the
  // first layer's normed embeddings, so the numbers of its stages are NOT that layer's: never
  // show, dump or export them.
  bool describeOnly = false;
  // A latent layer of a model folder comes as the forward's record (SourcedModel::recorded) when the caller shows that
  // pass (the command line's run and export, the window's pipeline); false: it is refused with the reason (what needs
  // the layer's W_q, W_k, W_v, like run --save-weights).
  bool recordedLatentLayer = false;
};

Result<SourcedModel> modelFromSource(const ModelRequest& r);

// Layer `layer` (0 .. L-1; none: 0) of a Hugging Face model folder (or its config.json) on
// `text` through the folder's tokenizer: the layer's normed hidden states as Q = K = V input, its
// attention weights, h, N, the causal mask, RoPE and the window as the folder's config.json says.
// `use` and `memoryBudgetBytes` bound the forward up to the layer and the recorded trace.
Result<SourcedModel> modelFolderLayerSource(const ModelRequest& r);
// A model folder gives the inputs, the weights and the masks itself: a checkpoint, a weights
// file, raw inputs or a mask file beside it would be ignored or contradict it, so each is refused
// in one line naming it.
Status checkModelFolderFiles(const InputFiles& files);
// Every file a model folder (or its config.json) is read from, named for messages ("--model's
// config.json", path): config.json, tokenizer.json, vocab.json, merges.txt, model.safetensors,
// model.safetensors.index.json and each shard the index names, whether present or not. Every
// output of every command and the window is checked against this list: writing one of them would
// change or destroy the model, and --force never allows it.
std::vector<std::pair<std::string, std::string>> modelFolderFiles(const std::string& modelPath);
// The command line's text for a model: exactly one of --text and --text-file (read verbatim, at
// most 4 MiB). model_text.cpp.
Result<std::string> readModelText(const std::optional<std::string>& text, const std::string& textFile);
// "--text" or "--text-file 'F'", for messages.
std::string modelTextWhere(const std::string& textFile);

// A trained checkpoint layer (`--checkpoint F --layer L`; the Train mode's "Open in pipeline"
// builds the same from the parameters in memory).
// Reading the file, the forward and the model's config all use `memoryBudgetBytes`.
Result<SourcedModel> checkpointLayerSource(const std::string& path, int layer, int items, const std::string& text,
                                           std::uint64_t memoryBudgetBytes);
// The pipeline's ModelConfig that describes a trained layer on `batch` (sizes, causal mask, bias,
// the tokens' symbols as the text).
ModelConfig checkpointLayerConfig(const train::GptConfig& g, const train::Batch& batch,
                                  const std::vector<std::vector<std::string>>& labels);

// Why a control of the configuration cannot be changed while these files are in use, or "" when
// it can. `control`: "text", "d_model", "heads", "bias", "seed", "mask", "scale", "batch" …
// A model folder fixes everything but the text and the layer.
std::string fixedByFiles(const InputFiles& files, const std::string& control);

}  // namespace mhascope
