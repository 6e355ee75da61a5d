// Checkpoint encoding and strict decoding (every wrong name, shape or metadata value listed), and
// the evaluation history block.
#include "train/checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/file_io.hpp"
#include "io/safetensors.hpp"
#include "train/circuit.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::train {

// ---------------------------------------------------------------------------------------------
// The history block
// ---------------------------------------------------------------------------------------------

namespace {

// Version 2: induction is prefix matching on repeated random tokens, plus copying and the
// previous-token score split by first occurrence / repeat. A version-1 block (the earlier
// induction score, which counted only the latest copy) is read as no history.
constexpr int kHistoryVersion = 2;
constexpr int kScoresPerHead = 8;  // previous-token, induction, self, first-token, entropy, copying, prev new, prev seen
constexpr std::size_t kFixedColumns = 4;  // step, probe loss, probe accuracy, train loss

std::size_t columnsFor(int layers, int heads) {
  return kFixedColumns + kScoresPerHead * static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads);
}

// The evaluations kept when there are more than `cap`: the first and the last, the first where
// the circuit had formed and the first where each head passed a role threshold (so "formed at
// step N" and "since step N" read the same from the saved history as from the whole run), and
// the rest evenly spaced.
std::vector<Evaluation> downsample(const std::vector<Evaluation>& h, std::size_t cap) {
  if (h.size() <= cap) return h;
  std::set<std::size_t> keep{0, h.size() - 1};
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (inductionCircuit(h[i]).formed) {
      keep.insert(i);
      break;
    }
  }
  const Evaluation& last = h.back();
  double HeadScores::*const roles[] = {&HeadScores::prevToken, &HeadScores::induction, &HeadScores::self,
                                       &HeadScores::firstToken, &HeadScores::copying, &HeadScores::prevTokenNew};
  for (int l = 0; l < last.layers && keep.size() < cap; ++l) {
    for (int i = 0; i < last.heads && keep.size() < cap; ++i) {
      for (auto role : roles) {
        for (std::size_t k = 0; k < h.size(); ++k) {
          if (h[k].complete() && l < h[k].layers && i < h[k].heads && h[k].at(l, i).*role >= kRoleThreshold) {
            keep.insert(k);
            break;
          }
        }
      }
    }
  }
  while (keep.size() > cap) keep.erase(std::prev(keep.end(), 2));  // landmarks past the cap: the latest go
  const std::size_t free = cap - keep.size();
  for (std::size_t j = 1; j <= free; ++j) keep.insert(j * (h.size() - 1) / (free + 1));
  std::vector<Evaluation> out;
  for (std::size_t i : keep) out.push_back(h[i]);
  return out;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(static_cast<float>(v)) : nlohmann::json(); }

// Deepest [ / { nesting outside strings: refused before parsing past a few levels.
int nestingDepth(std::string_view s) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (inString) {
      if (c == '\\') ++i;
      else if (c == '"') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

std::size_t maxSavedEvaluations(int layers, int heads) {
  // About a million numbers at most (≈ 10 MB of JSON), and never more than kMaxSavedEvaluations.
  const std::size_t byNumbers = 1'000'000 / columnsFor(std::max(1, layers), std::max(1, heads));
  return std::clamp<std::size_t>(byNumbers, 2, kMaxSavedEvaluations);
}

std::string historyMetadata(const std::vector<Evaluation>& history, int layers, int heads) {
  std::vector<Evaluation> complete;
  for (const Evaluation& e : history) {
    if (e.complete() && e.layers == layers && e.heads == heads) complete.push_back(e);
  }
  const std::vector<Evaluation> kept = downsample(complete, maxSavedEvaluations(layers, heads));
  nlohmann::json rows = nlohmann::json::array();
  for (const Evaluation& e : kept) {
    nlohmann::json r = nlohmann::json::array({e.step, number(e.loss), number(e.accuracy),
                                              e.trainLoss ? number(*e.trainLoss) : nlohmann::json()});
    for (const HeadScores& s : e.scores) {
      for (double v : {s.prevToken, s.induction, s.self, s.firstToken, s.entropy, s.copying, s.prevTokenNew,
                       s.prevTokenSeen}) {
        r.push_back(number(v));
      }
    }
    rows.push_back(std::move(r));
  }
  nlohmann::json j = {{"version", kHistoryVersion},
                      {"layers", layers},
                      {"heads", heads},
                      {"evaluations_in_run", complete.size()},
                      {"columns", "step, probe_loss, probe_accuracy, train_loss (null before the first step), then "
                                  "per layer, per head: prev_token, induction, self, first_token, entropy, copying, "
                                  "prev_token_new, prev_token_seen"},
                      {"evaluations", std::move(rows)}};
  return j.dump();
}

Result<std::vector<Evaluation>> parseHistoryMetadata(std::string_view text, int layers, int heads,
                                                     std::int64_t lastStep) {
  auto bad = [](const std::string& why) { return makeError("metadata 'history' " + why); };
  if (text.size() > kMaxHistoryBytes) {
    return bad("is " + std::to_string(text.size()) + " bytes, more than the limit of " +
               std::to_string(kMaxHistoryBytes));
  }
  if (nestingDepth(text) > 3) return bad("nests deeper than the block's 3 levels");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    return bad("is not valid JSON");
  }
  if (!j.is_object()) return bad("is not a JSON object");
  const auto version = j.find("version");
  if (version != j.end() && version->is_number_integer() && version->get<long long>() == 1) {
    return std::vector<Evaluation>{};  // the earlier induction score: not comparable, not shown
  }
  if (version == j.end() || !version->is_number_integer() || version->get<long long>() != kHistoryVersion) {
    return bad("has no version or an unknown one (this build reads version " + std::to_string(kHistoryVersion) + ")");
  }
  const auto jl = j.find("layers"), jh = j.find("heads"), rows = j.find("evaluations");
  if (jl == j.end() || jh == j.end() || !jl->is_number_integer() || !jh->is_number_integer() ||
      jl->get<long long>() != layers || jh->get<long long>() != heads) {
    return bad("is for other sizes than the model's (" + std::to_string(layers) + " layers, " + std::to_string(heads) +
               " heads)");
  }
  if (rows == j.end() || !rows->is_array()) return bad("has no 'evaluations' array");
  const std::size_t cap = maxSavedEvaluations(layers, heads);
  if (rows->size() > cap) {
    return bad("holds " + std::to_string(rows->size()) + " evaluations, more than the " + std::to_string(cap) +
               " a checkpoint of these sizes keeps");
  }
  const std::size_t columns = columnsFor(layers, heads);
  std::vector<Evaluation> out;
  out.reserve(rows->size());
  for (std::size_t k = 0; k < rows->size(); ++k) {
    const nlohmann::json& r = (*rows)[k];
    const std::string where = "evaluation " + std::to_string(k);
    if (!r.is_array() || r.size() != columns) {
      return bad(where + " is not an array of " + std::to_string(columns) + " numbers");
    }
    if (!r[0].is_number_integer()) return bad(where + ": the step is not an integer");
    Evaluation e;
    e.step = r[0].get<std::int64_t>();
    if (e.step < 0 || e.step > lastStep || (!out.empty() && e.step <= out.back().step)) {
      return bad(where + " has step " + std::to_string(e.step) +
                 ": steps must increase and not pass the checkpoint's step " + std::to_string(lastStep));
    }
    auto value = [&](std::size_t c, double& v) {
      if (!r[c].is_number()) return false;
      v = r[c].get<double>();
      return std::isfinite(v);
    };
    if (!value(1, e.loss) || !value(2, e.accuracy)) return bad(where + ": the probe loss and accuracy must be numbers");
    if (!r[3].is_null()) {
      double t = 0;
      if (!value(3, t)) return bad(where + ": the train loss must be a number or null");
      e.trainLoss = t;
    }
    e.layers = layers;
    e.heads = heads;
    e.scores.resize(static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads));
    std::size_t c = kFixedColumns;
    for (HeadScores& s : e.scores) {
      for (double* v : {&s.prevToken, &s.induction, &s.self, &s.firstToken, &s.entropy, &s.copying, &s.prevTokenNew,
                        &s.prevTokenSeen}) {
        if (!value(c++, *v)) return bad(where + ": a head score is not a finite number");
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Checkpoints
// ---------------------------------------------------------------------------------------------

std::map<std::string, std::string> variantMetadata(const GptConfig& g) {
  // Only when used: a plain model's checkpoint stays as it always was.
  std::map<std::string, std::string> m;
  if (!g.separateProjections()) return m;
  m["positions"] = trainPositionsName(g.positions);
  m["kv_heads"] = std::to_string(g.kv());
  if (g.positions == TrainPositions::Rope) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(g.ropeBase));  // 9 digits: the float exactly
    m["rope_base"] = buf;
  }
  return m;
}

std::map<std::string, std::string> checkpointMetadata(const Checkpoint& c) {
  const GptConfig& g = c.params.cfg;
  std::map<std::string, std::string> m = {
      {"format", "mhascope-gpt"},        {"version", "1"},
      {"vocab", std::to_string(g.vocab)}, {"seq", std::to_string(g.seqLen)},
      {"d_model", std::to_string(g.dModel)}, {"heads", std::to_string(g.heads)},
      {"layers", std::to_string(g.layers)}, {"mlp", g.mlp ? "1" : "0"},
      {"task", taskName(c.task.kind)},    {"step", std::to_string(c.step)},
      {"seed", std::to_string(c.seed)},   {"period_min", std::to_string(c.task.periodMin)},
      {"period_max", std::to_string(c.task.periodMax)}};
  if (c.task.kind == TaskKind::Text) m["alphabet"] = nlohmann::json(c.alphabet).dump();
  for (auto& [k, v] : variantMetadata(g)) m[k] = v;
  m["history"] = historyMetadata(c.history, g.layers, g.heads);
  return m;
}

std::string encodeCheckpoint(Checkpoint c) {
  TensorMap tensors;
  for (const TensorView& tv : checkpointTensors(c.params)) {
    const RowMatrix& v = *tv.value;
    Tensor t(tv.isVector ? Shape{tv.count} : Shape{tv.count, v.cols()}, {});
    if (tv.isVector) {
      std::copy_n(v.data() + tv.first, tv.count, t.data.begin());
    } else {
      std::copy_n(v.data() + tv.first * v.cols(), tv.count * v.cols(), t.data.begin());  // row-major: rows are contiguous
    }
    tensors[tv.name] = std::move(t);
  }
  return encodeSafetensors(tensors, checkpointMetadata(c));
}

Status saveCheckpoint(const std::string& path, const Checkpoint& c) {
  return writeFileAtomic(path, encodeCheckpoint(c));
}

namespace {

template <class T>
bool parseInt(const std::string& s, T& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<Checkpoint> decodeCheckpoint(std::string_view bytes, const std::string& what) {
  auto parsed = parseSafetensorsWithMetadata(bytes, what);
  if (!parsed) return parsed.error();
  const auto& meta = parsed->metadata;
  std::vector<std::string> problems;
  auto text = [&](const char* key) -> std::string {
    auto it = meta.find(key);
    if (it == meta.end()) {
      problems.push_back(std::string("metadata '") + key + "' is missing");
      return {};
    }
    return it->second;
  };
  auto integer = [&](const char* key, long long lo, long long hi) -> long long {
    auto it = meta.find(key);
    long long v = 0;
    if (it == meta.end()) {
      problems.push_back(std::string("metadata '") + key + "' is missing");
    } else if (!parseInt(it->second, v) || v < lo || v > hi) {
      problems.push_back(std::string("metadata '") + key + "' is '" + it->second + "', expected an integer in " +
                         std::to_string(lo) + " .. " + std::to_string(hi));
      v = 0;
    }
    return v;
  };
  const std::string format = text("format");
  if (!format.empty() && format != "mhascope-gpt") {
    problems.push_back("metadata 'format' is '" + format + "', expected 'mhascope-gpt'");
  }
  const std::string version = text("version");
  if (!version.empty() && version != "1") problems.push_back("metadata 'version' is '" + version + "', expected '1'");
  Checkpoint c;
  GptConfig g;
  g.vocab = static_cast<int>(integer("vocab", 2, kMaxVocab));
  g.seqLen = static_cast<int>(integer("seq", 2, kMaxSeq));
  g.dModel = static_cast<int>(integer("d_model", 1, kMaxDModel));
  g.heads = static_cast<int>(integer("heads", 1, kMaxDModel));
  g.layers = static_cast<int>(integer("layers", 1, 4));
  g.mlp = integer("mlp", 0, 1) == 1;
  c.step = integer("step", 0, 1ll << 40);
  // The seed is any 64-bit unsigned value (`train --seed` takes 0 … 18446744073709551615).
  if (auto it = meta.find("seed"); it == meta.end()) {
    problems.push_back("metadata 'seed' is missing");
  } else if (!parseInt(it->second, c.seed)) {
    problems.push_back("metadata 'seed' is '" + it->second + "', expected an integer in 0 .. 18446744073709551615");
  }
  const std::string task = text("task");
  if (!task.empty()) {
    auto k = taskFromName(task);
    if (!k) problems.push_back("metadata 'task' is '" + task + "', expected induction, reverse, sort or text");
    else c.task.kind = *k;
  }
  if (c.task.kind == TaskKind::Induction) {
    c.task.periodMin = static_cast<int>(integer("period_min", 1, kMaxSeq));
    c.task.periodMax = static_cast<int>(integer("period_max", 1, kMaxSeq));
  }  // the other tasks have no period: whatever is stored there is not used
  if (c.task.kind == TaskKind::Text) {
    const std::string a = text("alphabet");
    if (!a.empty()) {
      try {
        c.alphabet = nlohmann::json::parse(a).get<std::vector<std::string>>();
        if (static_cast<int>(c.alphabet.size()) != g.vocab) {
          problems.push_back("metadata 'alphabet' has " + std::to_string(c.alphabet.size()) +
                             " characters but vocab is " + std::to_string(g.vocab));
        }
      } catch (const std::exception&) {
        problems.push_back("metadata 'alphabet' is not a JSON array of strings");
      }
    }
  }
  if (g.dModel > 0 && g.heads > 0 && g.dModel % g.heads != 0) {
    problems.push_back("metadata d_model (" + std::to_string(g.dModel) + ") is not divisible by heads (" +
                       std::to_string(g.heads) + ")");
  }
  // The attention variant: absent in checkpoints of plain models (learned positions, N = h).
  if (auto it = meta.find("positions"); it != meta.end()) {
    auto pos = trainPositionsFromName(it->second);
    if (!pos) problems.push_back("metadata 'positions' is '" + it->second + "', expected learned, rope or alibi");
    else g.positions = *pos;
  }
  if (meta.count("kv_heads")) g.kvHeads = static_cast<int>(integer("kv_heads", 1, kMaxDModel));
  if (auto it = meta.find("rope_base"); it != meta.end()) {
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (g.positions != TrainPositions::Rope) {
      problems.push_back("metadata 'rope_base' is set but positions are " + std::string(trainPositionsName(g.positions)));
    } else if (it->second.empty() || end != it->second.c_str() + it->second.size() || !std::isfinite(v) || !(v > 0) ||
               v > std::numeric_limits<float>::max()) {
      problems.push_back("metadata 'rope_base' is '" + it->second + "', expected a finite number > 0");
    } else {
      g.ropeBase = static_cast<float>(v);
    }
  } else if (g.positions == TrainPositions::Rope) {
    problems.push_back("metadata 'rope_base' is missing (positions are rope)");
  }
  if (g.kvHeads > 0 && g.heads > 0 && (g.kvHeads > g.heads || g.heads % g.kvHeads != 0)) {
    problems.push_back("metadata kv_heads (" + std::to_string(g.kvHeads) + ") does not divide heads (" +
                       std::to_string(g.heads) + ")");
  }
  if (problems.empty() && (meta.count("positions") || meta.count("kv_heads")) && !g.separateProjections()) {
    problems.push_back("metadata 'positions' / 'kv_heads' describe a plain model (learned positions, N = h): such "
                       "a checkpoint has neither key and uses the in_proj names");
  }
  if (problems.empty() && g.positions == TrainPositions::Rope && g.dk() % 2 != 0) {
    problems.push_back("positions are rope but d_k = d_model / heads = " + std::to_string(g.dk()) + " is odd");
  }
  c.task.vocab = g.vocab;
  c.task.seq = g.seqLen;
  if (problems.empty() && c.task.kind != TaskKind::Text) {
    // The stored task must be one the commands can rebuild (its probe batch): say so here, with
    // the file's name, rather than later without it.
    if (auto t = Task::make(c.task); !t) problems.push_back("its task settings cannot work: " + t.error().message);
  }
  const bool sizesOk = problems.empty();
  if (sizesOk) {
    // Names and shapes first, from the sizes alone: a small file that declares huge sizes is
    // refused here, before anything of those sizes is allocated.
    std::set<std::string> expected;
    for (const ParamShape& ps : paramShapes(g)) {
      expected.insert(ps.name);
      auto it = parsed->tensors.find(ps.name);
      if (it == parsed->tensors.end()) {
        problems.push_back("missing tensor '" + ps.name + "' " + shapeToString(ps.shape));
      } else if (it->second.shape != ps.shape) {
        problems.push_back("'" + ps.name + "' has shape " + shapeToString(it->second.shape) + ", expected " +
                           shapeToString(ps.shape));
      }
    }
    for (const auto& [name, t] : parsed->tensors) {
      if (!expected.count(name)) problems.push_back("unexpected tensor '" + name + "' " + shapeToString(t.shape));
    }
  }
  if (sizesOk && problems.empty()) {
    if (auto it = meta.find("history"); it != meta.end()) {
      auto h = parseHistoryMetadata(it->second, g.layers, g.heads, c.step);
      if (!h) problems.push_back(h.error().message);
      else c.history = std::move(*h);
    }  // older checkpoints have no history: it stays empty
  }
  if (!problems.empty()) {
    std::string msg = what + " is not a usable mhascope checkpoint:";
    for (const auto& p : problems) msg += "\n  - " + p;
    if (!sizesOk) msg += "\n  (tensor names and shapes were not checked: the sizes in the metadata are needed first)";
    return makeError(msg);
  }
  // Every tensor is in the file with its expected shape: the parameters are no larger than it.
  c.params = zeroParams(g);
  for (const TensorView& tv : checkpointTensors(c.params)) {
    auto& t = parsed->tensors.at(tv.name);
    float* at = tv.value->data() + (tv.isVector ? tv.first : tv.first * tv.value->cols());
    std::copy(t.data.begin(), t.data.end(), at);
    t.data = {};  // one copy at a time
  }
  return c;
}

Result<Checkpoint> loadCheckpoint(const std::string& path, std::optional<std::uint64_t> memoryBudgetBytes) {
  auto size = regularFileSize(path);
  if (!size) return size.error();
  // Reading holds the file's bytes, its tensors as floats and then the parameters: about three
  // times the file (the tensors' bytes are the parameters' bytes, the header is small).
  const std::uint64_t budget = memoryBudgetBytes ? *memoryBudgetBytes : defaultMemoryBudget();
  const double need = 3.0 * static_cast<double>(*size);
  if (need > static_cast<double>(budget)) {
    return makeError("'" + path + "' is " + formatBytes(static_cast<double>(*size)) + "; reading it as a checkpoint "
                     "needs about " + formatBytes(need) + " (its bytes, its tensors and the parameters), more than "
                     "the memory budget of " + formatBytes(static_cast<double>(budget)) +
                     "; raise the budget (--memory-budget MiB)");
  }
  auto bytes = readFile(path, *size);
  if (!bytes) return bytes.error();
  auto c = decodeCheckpoint(*bytes, path);
  if (!c) return c.error();
  c->origin = path;
  return c;
}

}  // namespace mhascope::train
