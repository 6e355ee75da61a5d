// A layer of a Hugging Face model folder as the engine's Model (see model_source.hpp):
// the text through the folder's tokenizer (model_text.hpp), the layers before it through
// core/model (model::layerAttention), and a ModelConfig that describes the layer truthfully, so
// the controls, the subtitle and the workspace say what the folder decided.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "io/file_io.hpp"
#include "model/families/family.hpp"
#include "model/layer_source.hpp"
#include "model_source/model_source.hpp"
#include "model_source/model_text.hpp"
#include "util/format.hpp"

namespace mhascope {
namespace {

// The pipeline's config of the layer: sizes, N, positions, mask and window as the architecture
// has them; B = 1 and the tokens as the tokenizer split the text.
ModelConfig modelLayerConfig(const model::ModelSpec& s, const MhaWeights& w, const ModelText& mt,
                             std::uint64_t budget) {
  ModelConfig c;
  c.name = "model";
  c.description = std::string(s.family->modelType) + " model " + mt.folder.dir();
  c.text = mt.text;
  c.dModel = s.dModel;
  c.heads = s.heads;
  c.kvHeads = s.kvHeads == s.heads ? 0 : s.kvHeads;
  c.headDim = s.headDim;
  c.batch = 1;
  c.tokens = 0;
  c.bias = w.hasBias;
  // Learned positions (GPT-2's) were added to the embeddings before layer 0: they are inside the
  // hidden states, not a step of this attention.
  c.positions = false;
  c.attnPositions = s.rope() ? AttnPositions::Rope : AttnPositions::None;
  c.ropeBase = static_cast<float>(s.ropeTheta);
  c.ropeStyle = s.family->ropeStyle;
  c.window = s.window;
  c.sinks = 0;
  c.mask = MaskKind::Causal;
  c.padLastKeys = 0;
  c.scale = ScaleKind::SqrtDk;
  c.memoryBudgetBytes = budget;
  return c;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> modelFolderFiles(const std::string& modelPath) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::is_directory(modelPath, ec) ? fs::path(modelPath) : fs::path(modelPath).parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> names;
  const auto add = [&](const std::string& name) {
    if (names.insert(name).second) out.emplace_back("--model's " + name, (dir / name).string());
  };
  // Every name the folder is read by, present or not: a new model.safetensors beside an index, or
  // a new tokenizer.json beside vocab.json, would change the model as surely as an overwrite.
  for (const char* n : {"config.json", "tokenizer.json", "vocab.json", "merges.txt", "model.safetensors",
                        "model.safetensors.index.json"}) {
    add(n);
  }
  // The shards the index names. An index that cannot be read lists none here; opening the folder
  // refuses it with the reason.
  const std::string index = (dir / "model.safetensors.index.json").string();
  if (fs::is_regular_file(index, ec)) {
    if (auto text = readFile(index, 64ull << 20)) {
      const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_object() && j.contains("weight_map") && j.at("weight_map").is_object()) {
        for (const auto& [tensor, file] : j.at("weight_map").items()) {
          if (!file.is_string()) continue;
          const std::string f = file.get<std::string>();
          if (!f.empty() && f.find('/') == std::string::npos && f.find('\\') == std::string::npos && f != "." &&
              f != "..") {
            add(f);
          }
        }
      }
    }
  }
  return out;
}

Status checkModelFolderFiles(const InputFiles& f) {
  if (!f.checkpoint.empty()) {
    return makeError("--model '" + f.model + "' and --checkpoint '" + f.checkpoint +
                     "' both give the layer to show; keep one");
  }
  if (!f.weights.empty()) {
    return makeError("--weights '" + f.weights + "' cannot be used with --model: the model folder's safetensors "
                     "hold the layer's weights");
  }
  for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--query", &f.query},
                                   {"--key", &f.key}, {"--value", &f.value}}) {
    if (!path->empty()) {
      return makeError(std::string(flag) + " '" + *path + "' cannot be used with --model: the layer's inputs are the "
                       "model's own hidden states on the text");
    }
  }
  if (!f.keyPaddingMask.empty()) {
    return makeError("--key-padding-mask '" + f.keyPaddingMask + "' cannot be used with --model: the text is one "
                     "item (B = 1) with no padding");
  }
  if (!f.attnMask.empty()) {
    return makeError("--attn-mask '" + f.attnMask + "' cannot be used with --model: the model's mask is causal (and "
                     "its sliding window, if any), as its config.json says");
  }
  return Ok{};
}

Result<SourcedModel> modelFolderLayerSource(const ModelRequest& r) {
  const InputFiles& f = r.files;
  if (auto s = checkModelFolderFiles(f); !s) return s.error();
  const std::uint64_t budget = r.config.memoryBudgetBytes;
  auto mt = tokenizeForModel(f.model, r.config.text, r.modelTextWhere, r.caches.tokenizers.get(), budget);
  if (!mt) return mt.error();
  const model::ModelSpec& s = mt->folder.spec();
  const int layer = f.layer.value_or(0);
  if (layer < 0 || layer >= s.layers) {
    return makeError("--layer " + std::to_string(layer) + " is outside the model's " + std::to_string(s.layers) +
                     " layers (0 .. " + std::to_string(s.layers - 1) + ", " + layersKey(s) + " in " +
                     mt->folder.dir() + "/config.json)");
  }
  const auto T = static_cast<std::int64_t>(mt->ids.size());
  // The recorded trace and what the command writes, before the forward allocates anything.
  MemoryUse use = r.use;
  if (r.exportAllHeads) use.exportSlices = s.heads;
  use.rotary = s.rope();
  use.windowMask = s.window > 0;
  use.headDim = s.headDim;
  // The model fixes h and d_model: only a shorter text (or more budget) helps, and the message says so.
  if (const MemoryEstimate e = estimateMemory(1, T, T, s.dModel, s.heads, use);
      e.total() > static_cast<double>(budget)) {
    return makeError("layer " + std::to_string(layer) + " on " + std::to_string(T) + " tokens needs about " +
                     formatBytes(e.total()) + " (" + e.describe() + "), more than the memory budget of " +
                     formatBytes(static_cast<double>(budget)) + "; shorten the text (the model fixes h = " +
                     std::to_string(s.heads) + " and d_model = " + std::to_string(s.dModel) +
                     ") or raise the budget (--memory-budget MiB)");
  }
  if (auto st = validateSizes(1, T, T, s.dModel, s.heads, budget, use); !st) return st.error();

  model::ForwardOptions opt;
  opt.keepAttention = false;
  opt.keepHidden = false;
  opt.tokenLabels = mt->labels;
  opt.memoryBudgetBytes = budget;
  if (!r.describeOnly) opt.residuals = r.caches.residuals;
  if (r.modelProgress) {
    opt.progress = [&r, layers = s.layers](int done) { return r.modelProgress(done, layers); };
  }
  // Describing the layer needs its weights, its options and T, not the hidden states the layers
  // before it make: layer 0's input (the embeddings through its norm) stands in, and layer L's
  // own attention weights and options (its window, positions, q/k norm) replace layer 0's.
  SourcedModel out;
  if (s.latent.enabled() && r.recordedLatentLayer && !r.describeOnly) {
    // A latent layer is no W_q, W_k, W_v layer the engine could re-run: the model's own forward records it, and the
    // command shows that record (SourcedModel::recorded).
    opt.traceLayer = layer;
    opt.tokenLabels = mt->labels;
    auto forward = model::runForward(mt->folder, mt->ids, opt);
    if (!forward) return forward.error();
    auto recorded = std::make_shared<Trace>(std::move(forward->trace));
    out.model.inputs.query = recorded->copyOf(StageId::Query);
    out.model.inputs.key = out.model.inputs.value = out.model.inputs.query;
    out.model.inputs.queryTokens = out.model.inputs.keyTokens = recorded->queryTokens;
    out.model.options = model::attentionOptionsFor(s, layer);
    out.model.weights.dModel = s.dModel;
    out.recorded = std::move(recorded);
    out.rerunRefusal = model::latentRerunRefusal(s, layer);
  } else {
    auto la = model::layerAttention(mt->folder, mt->ids, r.describeOnly ? 0 : layer, opt);
    if (!la) return la.error();
    if (r.describeOnly && layer != 0) {
      auto lw = mt->folder.layer(layer);
      if (!lw) return lw.error();
      AttentionOptions own = model::layerOptions(s, *lw, layer);
      own.memoryBudgetBytes = la->options.memoryBudgetBytes;
      own.threads = la->options.threads;
      la->options = std::move(own);
      la->weights = std::move(lw->attention);
    }
    out.model.inputs = std::move(la->inputs);
    out.model.weights = *la->weights;
    out.model.options = std::move(la->options);
  }
  out.model.options.recordEveryStage = true;  // every stage, for the pipeline and the dump
  out.model.options.layer = layer;
  out.config = modelLayerConfig(s, out.model.weights, *mt, budget);
  out.seedUsed = false;

  auto info = std::make_shared<ModelLayerInfo>();
  info->dir = mt->folder.dir();
  info->architecture = s.family->modelType;
  info->layer = layer;
  info->layers = s.layers;
  info->layerGiven = f.layer.has_value();
  info->heads = s.heads;
  info->kvHeads = s.kvHeads;
  if (s.latent.enabled()) {
    info->latentRank = s.latent.kvRank;
    info->latentRopeDim = s.latent.ropeDim;
  }
  const model::LayerKind kind = s.layerKind(layer);  // this layer's own window and positions
  info->rope = s.rope() && kind.rope;
  info->window = kind.window;
  info->text = mt->text;
  info->ids = mt->ids;
  info->labels = mt->labels;
  info->bos = mt->bos;
  info->bosNote = bosNote(*mt);
  info->tokenizerFiles = mt->tokenizerFiles;
  info->textNote = mt->textNote;
  // A layer is an index (0-based); L is the count: "layer 3 (L = 12)". Short, most telling first: a
  // picture's subtitle is cut at its width.
  std::string positions = s.latent.enabled() ? "multi-head latent attention (the model's own forward recorded it)"
                         : !s.rope()   ? "learned positions inside the hidden states"
                         : !kind.rope ? "no positions in this layer"
                                      : std::string("RoPE theta ") +
                                            formatGeneral(kind.ropeTheta > 0 ? kind.ropeTheta : s.ropeTheta, 9) +
                                            (s.ropeScaling.enabled ? " with llama3 scaling" : "");
  out.describeNote = "; " + info->architecture + " model " + info->dir + ", layer " + std::to_string(layer) +
                     " (L = " + std::to_string(s.layers) + "), " + std::to_string(T) + " tokens (" +
                     mt->tokenizerFiles + (mt->bos ? ", BOS first" : "") + "), " + positions +
                     (mt->folder.store().note().empty() ? "" : "; weights from model.safetensors (the index beside it is not read)") +
                     (mt->textNote.empty() ? "" : "; " + mt->textNote);
  out.modelLayer = std::move(info);
  return out;
}

}  // namespace mhascope
