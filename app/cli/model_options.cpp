// MODEL options → ModelConfig (conflicts, preset + overrides), then config + files → Model through
// the model source the window shares (core/model_source/model_source.hpp); --save-weights.
#include "options.hpp"
#include "model_options.hpp"
#include "command_common.hpp"  // refuseInsideModelFolder

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "io/file_io.hpp"
#include "checkpoint_layer.hpp"
#include "io/safetensors.hpp"
#include "attention/tokenizer.hpp"
#include "util/utf8.hpp"
#include "io/weights_io.hpp"
#include "model_source/model_source.hpp"
#include "util/memory_budget.hpp"
#include "util/format.hpp"  // formatGeneral
#include "io/presets.hpp"

namespace mhascope::cli {

namespace {

// "032" -> "32"; the empty string and an error message when `text` is not a decimal integer in
// [lo, hi]. CLI11 reads integers with base 0 (a leading 0 means octal, "08" fails), so every
// integer goes through here first and reaches CLI11 without leading zeros.
std::string normalizeDecimal(const std::string& text, long long lo, unsigned long long hi, std::string& err) {
  const std::string range = "a decimal integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                            ", got '" + text + "'";
  std::string_view v = text;
  bool neg = false;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
    neg = v[0] == '-';
    v.remove_prefix(1);
  }
  if (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    err = "must be " + range;
    return "";
  }
  unsigned long long mag = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), mag, 10);
  if (ec == std::errc::result_out_of_range || ptr != v.data() + v.size()) {
    err = "must be " + range + " (too large)";
    return "";
  }
  if (neg && mag != 0) {
    const unsigned long long maxNeg = lo >= 0 ? 0 : static_cast<unsigned long long>(-(lo + 1)) + 1;
    if (mag > maxNeg) {
      err = "must be " + range;
      return "";
    }
    return "-" + std::to_string(mag);
  }
  if (mag > hi || (lo > 0 && mag < static_cast<unsigned long long>(lo))) {
    err = "must be " + range;
    return "";
  }
  return std::to_string(mag);
}

}  // namespace

CLI::Validator decimalInteger(long long lo, unsigned long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        std::string err;
        std::string n = normalizeDecimal(s, lo, hi, err);
        if (!err.empty()) return err;
        s = n;
        return {};
      },
      "INT", "decimal");
}

Result<long long> parseDecimal(const std::string& text, const std::string& flag, long long lo,
                               unsigned long long hi) {
  std::string err;
  const std::string n = normalizeDecimal(text, lo, std::min<unsigned long long>(hi, LLONG_MAX), err);
  if (!err.empty()) return makeError(flag + " " + err);
  return std::stoll(n);
}

CLI::Validator nonEmptyPath() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return s.empty() ? "the path is empty ('' names no file or folder)" : "";
      },
      "PATH", "non-empty path");
}

int exitForParseError(CLI::App& app, const CLI::ParseError& e, const std::string& helpCommand) {
  if (e.get_exit_code() == 0) {  // --help: CLI11 prints it (through std::cout, which shares stdout)
    app.exit(e);
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      const int err = errno;
      std::fprintf(stderr, "mhascope: error: cannot write to standard output: %s\n",
                   err ? std::strerror(err) : "write error");
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "mhascope: error: %s; the options: %s --help\n", e.what(), helpCommand.c_str());
  return 1;
}

void addModelOptions(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--preset", o.preset, "preset name (" + [] {
    std::string s;
    for (const auto& n : presetNames()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }() + ") or a preset .json path")->capture_default_str()->each([&o](const std::string&) { o.presetGiven = true; });
  cmd.add_option("--text", o.text, "query sentence; batch items separated by '|'");
  cmd.add_option("--kv-text", o.kvText, "key/value sentence(s): cross-attention");
  const auto anyInt = decimalInteger(INT_MIN, INT_MAX);  // the engine's messages say what is valid
  cmd.add_option("--d-model", o.dModel, "model width d_model")->transform(anyInt);
  cmd.add_option("--heads", o.heads, "number of heads h (must divide d_model)")->transform(anyInt);
  cmd.add_option("--tokens", o.tokens, "cut or extend every sentence to this many tokens (0: as typed)")->transform(anyInt);
  cmd.add_option("--batch", o.batch, "batch size B (sentences repeat cyclically; 0: one item per sentence)")->transform(anyInt);
  cmd.add_option("--seed", o.seed, "seed for embeddings and weights (0 to 2^64-1)")
      ->transform(decimalInteger(0, ULLONG_MAX));
  auto* bias = cmd.add_flag("--bias", o.bias, "use biases in the four projections");
  cmd.add_flag("--no-bias", o.noBias, "no biases")->excludes(bias);
  cmd.add_option("--mask", o.mask, "none | causal")->check(CLI::IsMember({"none", "causal"}));
  cmd.add_option("--pad-last", o.padLast, "key padding: ignore the last N keys of every batch item")
      ->transform(anyInt);
  cmd.add_option("--key-padding-mask", o.files.keyPaddingMask, ".npy (B, T_k); nonzero = ignore that key")->check(nonEmptyPath());
  cmd.add_option("--attn-mask", o.files.attnMask, ".npy (T_q, T_k); nonzero = blocked")->check(nonEmptyPath());
  cmd.add_option("--scale", o.scale, "sqrt-dk | sqrt-dmodel | none")
      ->check(CLI::IsMember({"sqrt-dk", "sqrt-dmodel", "none"}));
  cmd.add_flag("--no-positions", o.noPositions, "do not add sinusoidal position codes (= --positions none)");
  cmd.add_option("--positions", o.positions,
                 "sinusoidal (codes added to the inputs) | rope (q and k rotated) | alibi (bias on the scores) | none")
      ->check(CLI::IsMember({"sinusoidal", "rope", "alibi", "none"}));
  cmd.add_option("--rope-base", o.ropeBase, "RoPE: inv_freq_i = base^(-2i/d_k) (default 10000)");
  cmd.add_option("--rope-style", o.ropeStyle, "RoPE pairing: half (Hugging Face Llama's rotate_half, default) | "
                 "interleaved (original Llama: pairs 2i, 2i+1)")
      ->check(CLI::IsMember({"half", "interleaved"}));
  cmd.add_option("--kv-heads", o.kvHeads, "N K/V heads (grouped-query attention; N divides h; 1: multi-query; "
                 "default h)")->transform(anyInt);
  cmd.add_option("--head-dim", o.headDim, "d_k, each head's width (default d_model / h; another width makes W_q "
                 "(d_model, h*d_k) and W_o (h*d_k, d_model), as Qwen3 and Gemma have them)")->transform(anyInt);
  cmd.add_option("--window", o.window, "sliding window W: query t sees keys t-W < j <= t (|t-j| < W without a "
                 "causal mask)")->transform(anyInt);
  cmd.add_option("--softcap", o.softcap, "the scores' softcap c: the scaled scores become c*tanh(s/c) before the "
                 "mask, as Gemma 2 caps them (the softcapped stage; default none)");
  cmd.add_flag("--qk-norm", o.qkNorm, "RMSNorm of each head's q and k after the split, before RoPE, as Qwen3 and "
               "Gemma 3 do (gains 1; the q_normed/k_normed stages)");
  cmd.add_option("--sink", o.sink, "a learned attention sink of logit LOGIT in every head, as gpt-oss has one per "
                 "head: one more softmax column, dropped, so each row's weights sum to less than 1 (the sink_share "
                 "stage; default none)");
  cmd.add_option("--sinks", o.sinks, "with --window: keys 0 .. S-1 stay visible (attention sinks)")->transform(anyInt);
  cmd.add_option("--query", o.files.query, "raw query input .npy (B, T_q, d_model) float32/float64")->check(nonEmptyPath());
  cmd.add_option("--key", o.files.key, "raw key input .npy (B, T_k, d_model)")->check(nonEmptyPath());
  cmd.add_option("--value", o.files.value, "raw value input .npy (B, T_k, d_model)")->check(nonEmptyPath());
  cmd.add_option("--weights", o.files.weights, "load weights .safetensors (PyTorch MHA state_dict names)")->check(nonEmptyPath());
  cmd.add_option("--save-weights", o.saveWeightsFile, "save the weights used as .safetensors")->check(nonEmptyPath());
  cmd.add_option("--memory-budget", o.memoryBudgetMib,
                 "memory budget for everything the command holds (inputs, weights, trace, file buffers), MiB "
                 "(default: half of the available memory, 512 MiB … 32 GiB)")
      ->transform(decimalInteger(1, 1ull << 30));
  cmd.add_option("--checkpoint", o.files.checkpoint, "a `mhascope train` checkpoint: show one trained layer")->check(nonEmptyPath());
  cmd.add_option("--workspace", o.workspace, "a workspace .json (saved by the window or --save-workspace): its "
                 "configuration and files; options given here win over it")->check(nonEmptyPath());
  cmd.add_option("--model", o.files.model, "a Hugging Face model folder (or its config.json): layer --layer of it "
                 "on --text / --text-file through its own tokenizer")->check(nonEmptyPath());
  cmd.add_option("--text-file", o.textFile, "with --model: read the text from this file, verbatim")
      ->check(nonEmptyPath());
  cmd.add_option("--layer", o.files.layer, "with --checkpoint or --model: the layer, 0 .. L-1 (default 0)")
      ->transform(decimalInteger(0, INT_MAX));
}

namespace {

bool hasExtension(const std::string& path, const char* ext) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e == ext;
}

// An output that would replace one of the inputs: by file identity (same inode: "./q.npy",
// links), or, for a dump folder, an input inside the folder the dump replaces.
Status checkOutputsAgainstInputs(const ModelOptions& o, const OutputPlan& plan) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const auto& f : plan.files) outputs.push_back({"the output", f});
  if (!o.saveWeightsFile.empty()) outputs.push_back({"--save-weights", o.saveWeightsFile});
  if (!o.saveWorkspace.empty()) outputs.push_back({"--save-workspace", o.saveWorkspace});
  const auto inputs = filesRead(o);
  for (const auto& [oflag, out] : outputs) {
    for (const auto& [iflag, in] : inputs) {
      if (sameFile(in, out)) {
        return makeError(oflag + " '" + out + "' is the same file as " + iflag + " '" + in +
                         "'; writing it would destroy that input: choose another name");
      }
    }
  }
  if (!o.saveWeightsFile.empty()) {
    for (const auto& f : plan.files) {
      if (sameFile(f, o.saveWeightsFile)) {
        return makeError("--save-weights '" + o.saveWeightsFile + "' is the same file as the output '" + f +
                         "': choose two different names");
      }
    }
  }
  if (!o.files.model.empty()) {
    for (const auto& [oflag, out] : outputs) {
      if (auto s = refuseInsideModelFolder(oflag, out, o.files.model); !s) return s;
    }
    if (auto s = refuseInsideModelFolder("--dump", plan.folder, o.files.model); !s) return s;
  }
  if (!plan.folder.empty()) {
    for (const auto& [iflag, in] : inputs) {
      if (isInsideFolder(in, plan.folder)) {
        return makeError(iflag + " '" + in + "' is inside --dump '" + plan.folder +
                         "', which the dump replaces as a whole; dump into another folder");
      }
    }
    if (!o.saveWeightsFile.empty() && isInsideFolder(o.saveWeightsFile, plan.folder)) {
      return makeError("--save-weights '" + o.saveWeightsFile + "' is inside --dump '" + plan.folder +
                       "', which the dump replaces as a whole; save the weights elsewhere");
    }
  }
  return Ok{};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> inputFiles(const ModelOptions& o) {
  auto v = o.files.named();
  if (o.preset.find('/') != std::string::npos || hasExtension(o.preset, ".json")) v.push_back({"--preset", o.preset});
  return v;
}

std::vector<std::pair<std::string, std::string>> filesRead(const ModelOptions& o) {
  auto v = inputFiles(o);
  if (!o.files.model.empty()) {
    for (auto& f : modelFolderFiles(o.files.model)) v.push_back(std::move(f));
  }
  if (!o.textFile.empty()) v.push_back({"--text-file", o.textFile});
  if (!o.workspace.empty()) v.push_back({"--workspace", o.workspace});  // a .json, or the page that carries it
  return v;
}

namespace {

// A model folder decides its sizes, positions, masks and weights, and its tokenizer the tokens:
// every option that would set one of them is named in one refusal.
Status checkModelFolderOptions(const ModelOptions& o) {
  const struct {
    bool given;
    const char* flag;
  } decided[] = {{o.presetGiven, "--preset"},         {o.kvText.has_value(), "--kv-text"},
                 {o.dModel.has_value(), "--d-model"},  {o.heads.has_value(), "--heads"},
                 {o.tokens.has_value(), "--tokens"},   {o.batch.has_value(), "--batch"},
                 {o.seed.has_value(), "--seed"},       {o.bias, "--bias"},
                 {o.noBias, "--no-bias"},              {o.mask.has_value(), "--mask"},
                 {o.padLast.has_value(), "--pad-last"}, {o.scale.has_value(), "--scale"},
                 {o.noPositions, "--no-positions"},    {o.positions.has_value(), "--positions"},
                 {o.ropeBase.has_value(), "--rope-base"}, {o.ropeStyle.has_value(), "--rope-style"},
                 {o.kvHeads.has_value(), "--kv-heads"}, {o.headDim.has_value(), "--head-dim"},
                 {o.window.has_value(), "--window"}, {o.softcap.has_value(), "--softcap"},
                 {o.qkNorm, "--qk-norm"}, {o.sink.has_value(), "--sink"},
                 {o.sinks.has_value(), "--sinks"}};
  std::string list;
  for (const auto& d : decided) {
    if (d.given) list += (list.empty() ? "" : ", ") + std::string(d.flag);
  }
  if (list.empty()) return Ok{};
  return makeError("--model takes the sizes, positions and weights from the folder's config.json and safetensors, "
                   "and the tokens from its tokenizer; drop " + list);
}

}  // namespace

// Step 1: options that contradict each other or would be ignored, before anything is read.
Status checkOptionConflicts(const ModelOptions& o) {
  if (!o.files.model.empty()) return checkModelFolderOptions(o);
  if (!o.textFile.empty()) {
    return makeError("--text-file needs --model DIR (a model folder's tokenizer reads the text verbatim); without a "
                     "model give --text");
  }
  if (o.files.layer) {
    return makeError("--layer needs --checkpoint m.safetensors (a model trained by `mhascope train`) or --model DIR "
                     "(a Hugging Face model folder)");
  }
  if (o.text) {
    if (auto p = batchTextProblem(*o.text, "--text"); !p.empty()) return makeError(p);
  }
  if (o.kvText) {
    if (auto p = batchTextProblem(*o.kvText, "--kv-text"); !p.empty()) return makeError(p);
  }
  if (!o.files.query.empty()) {
    // Options that only shape text input would be ignored: say so instead.
    const struct {
      bool given;
      const char* flag;
    } textOnly[] = {{o.text.has_value(), "--text"},   {o.kvText.has_value(), "--kv-text"},
                    {o.tokens.has_value(), "--tokens"}, {o.batch.has_value(), "--batch"},
                    {o.noPositions, "--no-positions"}, {o.padLast.has_value(), "--pad-last"},
                    {o.positions && *o.positions == "sinusoidal", "--positions sinusoidal"}};
    for (const auto& t : textOnly) {
      if (t.given) {
        return makeError(std::string(t.flag) + " cannot be used with --query: the raw inputs' shapes (B, T, d_model) "
                         "come from the .npy files" +
                         (std::string(t.flag) == "--pad-last" ? "; give --key-padding-mask FILE.npy instead" : ""));
      }
    }
    if (o.seed && !o.files.weights.empty()) {
      return makeError("--seed is not used with --query and --weights: neither embeddings nor weights come from it");
    }
  } else if (!o.files.key.empty() || !o.files.value.empty()) {
    return makeError("--key/--value need --query as well (raw inputs replace the text)");
  }
  if (o.noPositions && o.positions) {
    return makeError("--no-positions and --positions " + *o.positions + " contradict each other: --no-positions is "
                     "--positions none; give one of them");
  }
  if (o.window && *o.window < 1) {
    return makeError("--window W must be at least 1, got " + std::to_string(*o.window) +
                     " (leave --window out for no window)");
  }
  if (o.kvHeads && *o.kvHeads < 1) {
    return makeError("--kv-heads N must be at least 1, got " + std::to_string(*o.kvHeads) + " (N = h is multi-head "
                     "attention, N = 1 multi-query)");
  }
  if (o.softcap && !(*o.softcap > 0.0 && *o.softcap < 1e30)) {
    return makeError("--softcap c must be a positive number, got " + formatGeneral(*o.softcap, 6) +
                     " (leave --softcap out for no softcap)");
  }
  if (o.sink && !(std::isfinite(*o.sink) && std::abs(*o.sink) < 1e30)) {
    return makeError("--sink LOGIT must be a finite number, got " + formatGeneral(*o.sink, 6) +
                     " (leave --sink out for no learned sink)");
  }
  if (o.headDim && *o.headDim < 1) {
    return makeError("--head-dim d_k must be at least 1, got " + std::to_string(*o.headDim) +
                     " (leave --head-dim out for d_k = d_model / h)");
  }
  if (!o.files.weights.empty() && (o.bias || o.noBias)) {
    return makeError(std::string(o.bias ? "--bias" : "--no-bias") + " cannot be used with --weights: the file "
                     "decides (in_proj_bias and out_proj.bias present or not)");
  }
  return Ok{};
}

// Step 2: the preset with the options on top. A preset's text-bound settings cannot follow raw
// inputs, which have no text: refused rather than silently dropped.
Result<ModelConfig> configFromOptions(const ModelOptions& o) {
  auto preset = o.workspaceConfig && !o.presetGiven ? Result<ModelConfig>(*o.workspaceConfig) : loadPreset(o.preset);
  if (!preset) return preset.error();
  ModelConfig cfg = *preset;
  if (o.text) cfg.text = *o.text;
  if (o.kvText) {
    cfg.kvText = *o.kvText;
    cfg.crossAttention = true;
  }
  if (o.dModel) cfg.dModel = *o.dModel;
  if (o.heads) cfg.heads = *o.heads;
  if (o.tokens) cfg.tokens = *o.tokens;
  if (o.batch) cfg.batch = *o.batch;
  if (o.padLast) cfg.padLastKeys = *o.padLast;
  if (o.seed) cfg.seed = *o.seed;
  if (o.bias) cfg.bias = true;
  if (o.noBias) cfg.bias = false;
  if (o.noPositions) cfg.positions = false;
  if (o.positions) {
    if (auto s = setPositions(cfg, *o.positions); !s) return s.error();
  }
  if (o.ropeBase) cfg.ropeBase = static_cast<float>(*o.ropeBase);
  if (o.ropeStyle) cfg.ropeStyle = *ropeStyleFromName(*o.ropeStyle);
  if ((o.ropeBase || o.ropeStyle) && cfg.attnPositions != AttnPositions::Rope) {
    return makeError(std::string(o.ropeBase ? "--rope-base" : "--rope-style") + " applies to RoPE only, but the "
                     "positions are " + positionsName(cfg) + ": add --positions rope");
  }
  if (o.kvHeads) cfg.kvHeads = *o.kvHeads;
  if (o.headDim) cfg.headDim = *o.headDim;
  if (o.softcap) cfg.softcap = static_cast<float>(*o.softcap);
  if (o.qkNorm) cfg.qkNorm = true;
  if (o.sink) {
    cfg.learnedSink = true;
    cfg.sinkLogit = static_cast<float>(*o.sink);
  }
  if (o.window) cfg.window = *o.window;
  if (o.sinks) cfg.sinks = *o.sinks;
  if (o.mask) cfg.mask = *maskFromName(*o.mask);
  if (o.scale) cfg.scale = *scaleFromName(*o.scale);
  // The machine's default (half of MemAvailable, util/memory_budget.hpp) unless given.
  cfg.memoryBudgetBytes = o.memoryBudgetMib ? *o.memoryBudgetMib << 20 : defaultMemoryBudget();
  if (!o.files.query.empty() && !cfg.scoreOverride.empty()) {
    return makeError("preset '" + o.preset + "' sets scores by hand (score_override), which needs its text's "
                     "tokens; it cannot be used with --query");
  }
  if (!o.files.query.empty() && cfg.padLastKeys > 0) {
    return makeError("preset '" + o.preset + "' pads the last " + std::to_string(cfg.padLastKeys) +
                     " keys (pad_last_keys), like --pad-last, which cannot be used with --query; give "
                     "--key-padding-mask FILE.npy instead");
  }
  return cfg;
}

namespace {

// A model folder's layer: the text from --text / --text-file, else from the workspace; the
// folder decides the rest.
Result<ResolvedModel> resolveModelFolderLayer(const ModelOptions& o, const OutputPlan& plan) {
  if (auto s = checkModelFolderOptions(o); !s) return s.error();
  if (auto s = checkModelFolderFiles(o.files); !s) return s.error();
  ModelRequest req;
  if (!o.text && o.textFile.empty() && o.workspaceConfig) {
    req.config.text = o.workspaceConfig->text;
    req.modelTextWhere = "the text of workspace '" + o.workspace + "' (/config/text)";
  } else {
    auto text = readModelText(o.text, o.textFile);
    if (!text) return text.error();
    req.config.text = std::move(*text);
    req.modelTextWhere = modelTextWhere(o.textFile);
  }
  req.config.memoryBudgetBytes = o.memoryBudgetMib ? *o.memoryBudgetMib << 20 : defaultMemoryBudget();
  req.files = o.files;
  req.use.stageFile = plan.stageFile;
  req.use.weightsFile = !o.saveWeightsFile.empty();
  if (plan.picture) req.use.exportSlices = 1;
  req.exportAllHeads = plan.picture && plan.allHeads;
  req.describeOnly = plan.describeOnly;
  req.recordedLatentLayer = plan.recordedLatentLayer;
  return modelFromSource(req);
}

}  // namespace

Result<ResolvedModel> resolveModel(const ModelOptions& o, const OutputPlan& plan) {
  if (!o.saveWeightsFile.empty() && !hasExtension(o.saveWeightsFile, ".safetensors")) {
    return makeError("--save-weights '" + o.saveWeightsFile +
                     "': the file is written as safetensors, so its name must end in .safetensors");
  }
  if (auto s = checkOutputsAgainstInputs(o, plan); !s) return s.error();
  if (!o.saveWorkspace.empty() && !hasExtension(o.saveWorkspace, ".json")) {
    return makeError("--save-workspace '" + o.saveWorkspace + "': a workspace is JSON, so its name must end in .json");
  }
  if (!o.files.model.empty()) {
    auto r = resolveModelFolderLayer(o, plan);
    if (!r && o.layerFromWorkspace && r.error().message.rfind("--layer ", 0) == 0) {
      return makeError("workspace '" + o.workspace + "', /files/layer: " + r.error().message.substr(2));
    }
    return r;
  }
  if (!o.files.checkpoint.empty()) {
    auto r = resolveCheckpointLayer(o);
    // A layer out of range that the workspace chose: name the file and the key, not an option the
    // user never typed.
    if (!r && o.layerFromWorkspace && r.error().message.rfind("--layer ", 0) == 0) {
      return makeError("workspace '" + o.workspace + "', /files/layer: " + r.error().message.substr(2));
    }
    return r;
  }
  if (auto s = checkOptionConflicts(o); !s) return s.error();
  auto cfg = configFromOptions(o);
  if (!cfg) return cfg.error();
  // The one estimate: everything this command holds at once.
  MemoryUse use;
  use.weightsFile = !o.files.weights.empty() || !o.saveWeightsFile.empty();
  use.stageFile = plan.stageFile;
  if (plan.picture) use.exportSlices = plan.allHeads ? std::max(cfg->heads, 1) : 1;

  ModelRequest req;
  req.config = std::move(*cfg);
  req.files = o.files;
  req.use = use;
  req.requiredDModel = o.dModel;
  auto r = modelFromSource(req);
  if (!r) return r.error();
  return r;
}

std::string describe(const ResolvedModel& r, const Trace& t) {
  return configSummary(t, r.config, r.seedUsed) + r.describeNote;
}

Status saveWeightsIfAsked(const ModelOptions& o, const ResolvedModel& r) {
  if (o.saveWeightsFile.empty()) return Ok{};
  return saveSafetensors(o.saveWeightsFile, stateDictFromWeights(r.model.weights), {{"format", "pt"}});
}

std::string usedConfigJson(const ModelOptions& o, const ResolvedModel& r) {
  nlohmann::json j = nlohmann::json::parse(presetToJson(r.config));
  const bool raw = !o.files.query.empty();
  if (raw) {
    // The preset's description speaks of its text, which raw inputs replace.
    for (const char* k : {"text", "kv_text", "tokens", "batch", "positions", "pad_last_keys", "description"}) j.erase(k);
  } else if (!r.config.crossAttention) {
    j.erase("kv_text");
  }
  if (raw && !o.files.weights.empty()) j.erase("seed");
  if (!raw && !o.files.weights.empty()) j["seed_used_for"] = "embeddings only (the weights come from --weights)";
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [flag, path] : inputFiles(o)) files[flag.substr(2)] = replaceInvalidUtf8(path);
  if (!files.empty()) j["input_files"] = files;
  return j.dump(2);
}

}  // namespace mhascope::cli
