// The training outputs' check: extensions, inputs, each other, links, and what may be replaced.
#include "train/outputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/file_io.hpp"

namespace mhascope::train {

namespace {

bool hasExtension(const std::string& path, const char* ext) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e == ext;
}

bool isSymlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The "__metadata__" of a .safetensors file from its header alone (the tensors are not read).
Result<std::map<std::string, std::string>> headerMetadata(const std::string& path) {
  auto size = regularFileSize(path);
  if (!size) return size.error();
  auto head = readFilePrefix(path, 8);
  if (!head) return head.error();
  if (head->size() < 8) return makeError("too short for a .safetensors header");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>((*head)[static_cast<std::size_t>(i)]);
  if (n > 100'000'000 || n > *size - 8) return makeError("its header length does not fit the file");
  auto bytes = readFilePrefix(path, 8 + n);
  if (!bytes) return bytes.error();
  try {
    const auto j = nlohmann::json::parse(bytes->substr(8));
    std::map<std::string, std::string> m;
    if (auto it = j.find("__metadata__"); it != j.end() && it->is_object()) {
      for (const auto& [k, v] : it->items()) {
        if (v.is_string()) m[k] = v.get<std::string>();
      }
    }
    return m;
  } catch (const std::exception&) {
    return makeError("its header is not JSON");
  }
}

// What an identity writes into the metadata's identifying keys.
std::map<std::string, std::string> identityKeys(const RunIdentity& r) {
  std::map<std::string, std::string> m = {{"vocab", std::to_string(r.model.vocab)},
                                          {"seq", std::to_string(r.model.seqLen)},
                                          {"d_model", std::to_string(r.model.dModel)},
                                          {"heads", std::to_string(r.model.heads)},
                                          {"layers", std::to_string(r.model.layers)},
                                          {"mlp", r.model.mlp ? "1" : "0"},
                                          {"task", taskName(r.task.kind)},
                                          {"seed", std::to_string(r.seed)}};
  if (r.task.kind == TaskKind::Induction) {
    m["period_min"] = std::to_string(r.task.periodMin);
    m["period_max"] = std::to_string(r.task.periodMax);
  }
  if (r.task.kind == TaskKind::Text) m["alphabet"] = nlohmann::json(r.alphabet).dump();
  // A plain model's checkpoint has no variant keys: "(none)" is what an absent key reads as below.
  const auto variant = variantMetadata(r.model);
  for (const char* key : {"positions", "kv_heads", "rope_base"}) {
    auto it = variant.find(key);
    m[key] = it == variant.end() ? "(none)" : it->second;
  }
  return m;
}

std::string orForce(const TrainOutputs& o) { return o.forceHint.empty() ? "" : ", or " + o.forceHint + " to replace it"; }

// An existing file at the checkpoint path: replaceable only if it is this run's, not ahead of it.
Status checkExistingCheckpoint(const TrainOutputs& o, const RunIdentity& writing) {
  const std::string& path = o.checkpoint;
  const std::string name = o.checkpointName + " '" + path + "'";
  auto meta = headerMetadata(path);
  if (!meta || meta->count("format") == 0 || meta->at("format") != "mhascope-gpt") {
    return makeError(name + " already exists and is not an mhascope checkpoint; choose another name" + orForce(o));
  }
  std::string differences;
  for (const auto& [key, want] : identityKeys(writing)) {
    auto it = meta->find(key);
    const std::string there = it == meta->end() ? "(none)" : it->second;
    if (there != want) {
      differences += (differences.empty() ? "" : ", ") + key + " " +
                     (key == "alphabet" ? std::string("differs") : there + " there, " + want + " here");
    }
  }
  if (!differences.empty()) {
    return makeError(name + " holds a checkpoint of another run (" + differences +
                     "); replacing it would lose that model: choose another name" + orForce(o));
  }
  long long step = 0;
  try {
    step = std::stoll(meta->count("step") ? meta->at("step") : "0");
  } catch (const std::exception&) {
    step = 0;
  }
  if (step > writing.step) {
    return makeError(name + " holds step " + std::to_string(step) + " of this run; it would be replaced by step " +
                     std::to_string(writing.step) + ": choose another name, " + o.continueHint + orForce(o));
  }
  return Ok{};
}

}  // namespace

RunIdentity runIdentity(const Checkpoint& c) {
  RunIdentity r;
  r.model = c.params.cfg;
  r.task = c.task;
  r.alphabet = c.alphabet;
  r.seed = c.seed;
  r.step = c.step;
  return r;
}

RunIdentity runIdentity(const Trainer& t) {
  RunIdentity r;
  r.model = t.params().cfg;
  r.task = t.settings().task;
  r.alphabet = t.task().alphabet();
  r.seed = t.settings().seed;
  r.step = t.stepCount();
  return r;
}

Status checkTrainOutputs(const TrainOutputs& o, const RunIdentity& writing) {
  struct Out {
    const std::string& path;
    const std::string& name;
    const char* ext;
    const char* kind;
  };
  std::vector<Out> outs;
  if (!o.checkpoint.empty()) outs.push_back({o.checkpoint, o.checkpointName, ".safetensors", "a checkpoint"});
  if (!o.log.empty()) outs.push_back({o.log, o.logName, ".csv", "the log (CSV)"});
  for (const Out& out : outs) {
    const std::string name = out.name + " '" + out.path + "'";
    if (!hasExtension(out.path, out.ext)) {
      return makeError(name + ": " + out.kind + " is written there, so its name must end in " + out.ext);
    }
    for (const auto& [flag, in] : o.inputs) {
      if (!in.empty() && sameFile(in, out.path)) {
        return makeError(name + " is the same file as " + flag + " '" + in +
                         "'; writing it would destroy that input: choose another name");
      }
    }
    if (isSymlink(out.path)) {
      return makeError(name + " is a symbolic link; writing would replace the link by a file: give the path of the "
                       "file itself");
    }
  }
  if (outs.size() == 2 && sameFile(o.checkpoint, o.log)) {
    return makeError(o.checkpointName + " and " + o.logName + " name the same file '" + o.checkpoint +
                     "': choose two different names");
  }
  if (o.force) return Ok{};
  if (!o.checkpoint.empty() && exists(o.checkpoint)) {
    if (auto s = checkExistingCheckpoint(o, writing); !s) return s;
  }
  if (!o.log.empty() && exists(o.log)) {
    return makeError(o.logName + " '" + o.log + "' already exists; a run's log starts a new file: choose another name" +
                     orForce(o));
  }
  return Ok{};
}

}  // namespace mhascope::train
