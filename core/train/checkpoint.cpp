// Checkpoint encoding and strict decoding (every wrong name, shape or metadata value listed).
#include "train/checkpoint.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "io/file_io.hpp"
#include "io/safetensors.hpp"

namespace mhascope::train {

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
  return m;
}

std::string encodeCheckpoint(Checkpoint c) {
  TensorMap tensors;
  for (const auto& np : c.params.list()) {
    const RowMatrix& v = *np.value;
    Tensor t(np.isVector ? Shape{v.size()} : Shape{v.rows(), v.cols()}, {});
    std::copy(v.data(), v.data() + v.size(), t.data.begin());
    tensors[np.name] = std::move(t);
  }
  return encodeSafetensors(tensors, checkpointMetadata(c));
}

Status saveCheckpoint(const std::string& path, const Checkpoint& c) {
  return writeFileAtomic(path, encodeCheckpoint(c));
}

namespace {

bool parseInt(const std::string& s, long long& out) {
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
  g.vocab = static_cast<int>(integer("vocab", 2, 1 << 16));
  g.seqLen = static_cast<int>(integer("seq", 2, 4096));
  g.dModel = static_cast<int>(integer("d_model", 1, 4096));
  g.heads = static_cast<int>(integer("heads", 1, 4096));
  g.layers = static_cast<int>(integer("layers", 1, 4));
  g.mlp = integer("mlp", 0, 1) == 1;
  c.step = integer("step", 0, 1ll << 40);
  c.seed = static_cast<std::uint64_t>(integer("seed", 0, std::numeric_limits<long long>::max()));
  c.task.periodMin = static_cast<int>(integer("period_min", 1, 4096));
  c.task.periodMax = static_cast<int>(integer("period_max", 1, 4096));
  const std::string task = text("task");
  if (!task.empty()) {
    auto k = taskFromName(task);
    if (!k) problems.push_back("metadata 'task' is '" + task + "', expected induction, reverse, sort or text");
    else c.task.kind = *k;
  }
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
  c.task.vocab = g.vocab;
  c.task.seq = g.seqLen;
  const bool sizesOk = problems.empty();
  if (sizesOk) {
    c.params = zeroParams(g);
    std::set<std::string> expected;
    for (const auto& np : c.params.list()) {
      expected.insert(np.name);
      const RowMatrix& v = *np.value;
      const Shape want = np.isVector ? Shape{v.size()} : Shape{v.rows(), v.cols()};
      auto it = parsed->tensors.find(np.name);
      if (it == parsed->tensors.end()) {
        problems.push_back("missing tensor '" + np.name + "' " + shapeToString(want));
      } else if (it->second.shape != want) {
        problems.push_back("'" + np.name + "' has shape " + shapeToString(it->second.shape) + ", expected " +
                           shapeToString(want));
      } else {
        std::copy(it->second.data.begin(), it->second.data.end(), np.value->data());
      }
    }
    for (const auto& [name, t] : parsed->tensors) {
      if (!expected.count(name)) problems.push_back("unexpected tensor '" + name + "' " + shapeToString(t.shape));
    }
  }
  if (!problems.empty()) {
    std::string msg = what + " is not a usable mhascope checkpoint:";
    for (const auto& p : problems) msg += "\n  - " + p;
    if (!sizesOk) msg += "\n  (tensor names and shapes were not checked: the sizes in the metadata are needed first)";
    return makeError(msg);
  }
  return c;
}

Result<Checkpoint> loadCheckpoint(const std::string& path) {
  auto bytes = readFile(path, 1ull << 31);
  if (!bytes) return bytes.error();
  return decodeCheckpoint(*bytes, path);
}

}  // namespace mhascope::train
