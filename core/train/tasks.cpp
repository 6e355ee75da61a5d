// Seeded task generators and their validation.
#include "train/tasks.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "io/file_io.hpp"
#include "attention/engine.hpp"  // formatBytes
#include "attention/random.hpp"
#include "attention/tokenizer.hpp"
#include "util/utf8.hpp"

namespace mhascope::train {

const char* taskName(TaskKind k) {
  switch (k) {
    case TaskKind::Induction: return "induction";
    case TaskKind::Reverse: return "reverse";
    case TaskKind::Sort: return "sort";
    case TaskKind::Text: return "text";
  }
  return "?";
}

Result<TaskKind> taskFromName(std::string_view name) {
  for (TaskKind k : {TaskKind::Induction, TaskKind::Reverse, TaskKind::Sort, TaskKind::Text}) {
    if (name == taskName(k)) return k;
  }
  return makeError("unknown task '" + std::string(name) + "'; choose induction, reverse, sort or text");
}

namespace {

// Calls f(code point) for each code point of valid UTF-8, as a view into `s` (no string per
// character: a 16 MiB text would otherwise take 32+ bytes a character, twice).
template <class F>
void forEachCodePoint(std::string_view s, F&& f) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = decodeUtf8Step(s, i).len;
    f(s.substr(i, n));
    i += n;
  }
}

std::uint64_t streamSeed(std::uint64_t seed, std::uint64_t step) {
  SplitMix64 mix(seed * 0x9E3779B97F4A7C15ull ^ (step + 0x5461736B5374ull));
  return mix.next();
}

int below(SplitMix64& rng, int n) { return static_cast<int>(rng.next() % static_cast<std::uint64_t>(n)); }

}  // namespace

Result<Task> Task::make(const TaskConfig& cfg) {
  std::vector<std::string> problems;
  const std::string T = std::to_string(cfg.seq);
  if (cfg.seq < 2) problems.push_back("sequence length T must be at least 2, got " + T);
  switch (cfg.kind) {
    case TaskKind::Induction:
      if (cfg.periodMin < 1 || cfg.periodMax < cfg.periodMin) {
        problems.push_back("the period range must satisfy 1 <= k_min <= k_max, got " +
                           std::to_string(cfg.periodMin) + " .. " + std::to_string(cfg.periodMax));
      }
      if (cfg.seq < 2LL * cfg.periodMax) {
        problems.push_back("T (" + T + ") must be at least 2 * k_max = " + std::to_string(2LL * cfg.periodMax) +
                           " so every sequence repeats its period at least once");
      }
      if (cfg.vocab < std::max(2, cfg.periodMax)) {
        problems.push_back("vocab (" + std::to_string(cfg.vocab) + ") must be at least max(2, k_max = " +
                           std::to_string(cfg.periodMax) + "): a period holds distinct tokens");
      }
      break;
    case TaskKind::Reverse:
    case TaskKind::Sort:
      if (cfg.vocab < 3) {
        problems.push_back("vocab (" + std::to_string(cfg.vocab) +
                           ") must be at least 3: two symbols and the separator SEP");
      }
      if (cfg.seq < 3) problems.push_back("T (" + T + ") must be at least 3 for a_1 SEP a_1");
      break;
    case TaskKind::Text: break;
  }
  Task task;
  task.cfg_ = cfg;
  if (cfg.kind == TaskKind::Text && problems.empty()) {
    auto size = regularFileSize(cfg.textPath);
    if (!size) return size.error();
    if (*size > kMaxTextBytes) {
      return makeError("the text file '" + cfg.textPath + "' is " + formatBytes(static_cast<double>(*size)) +
                       " (" + std::to_string(*size) + " bytes); the text task reads at most " +
                       formatBytes(static_cast<double>(kMaxTextBytes)) + ": use a shorter excerpt");
    }
    auto bytes = readFile(cfg.textPath, kMaxTextBytes);
    if (!bytes) return bytes.error();
    // Refused rather than replaced by U+FFFD: a replacement character would become a token of
    // the alphabet and the model would learn to predict it.
    if (const std::size_t bad = firstInvalidUtf8(*bytes); bad != std::string::npos) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>((*bytes)[bad])));
      return makeError("the text file '" + cfg.textPath + "' is not valid UTF-8: byte " + hex + " at offset " +
                       std::to_string(bad) + " (counting from 0) is not part of a UTF-8 character; save the file "
                       "as UTF-8");
    }
    std::string text = std::move(*bytes);
    std::set<std::string_view> distinct;
    forEachCodePoint(text, [&](std::string_view c) { distinct.insert(c); });
    std::vector<std::string> alphabet(distinct.begin(), distinct.end());  // sorted, as the set is
    distinct.clear();
    auto made = makeText(cfg.seq, std::move(alphabet), std::move(text));
    if (!made) return makeError("the text file '" + cfg.textPath + "': " + made.error().message);
    return made;
  }
  if (!problems.empty()) {
    std::string msg = std::string("the ") + taskName(cfg.kind) + " task settings cannot work:";
    for (const auto& p : problems) msg += "\n  - " + p;
    return makeError(msg);
  }
  return task;
}

Result<Task> Task::makeText(int seq, std::vector<std::string> alphabet, std::string text) {
  Task task;
  task.cfg_.kind = TaskKind::Text;
  task.cfg_.seq = seq;
  if (alphabet.size() > static_cast<std::size_t>(kMaxVocab)) {
    return makeError("the text has " + std::to_string(alphabet.size()) + " distinct characters; the vocabulary (one "
                     "token per character) holds at most " + std::to_string(kMaxVocab));
  }
  std::map<std::string_view, int> index;
  for (std::size_t i = 0; i < alphabet.size(); ++i) index[alphabet[i]] = static_cast<int>(i);
  std::size_t count = 0;
  forEachCodePoint(text, [&](std::string_view) { ++count; });
  task.text_.reserve(count);
  std::string missing;
  forEachCodePoint(text, [&](std::string_view c) {
    auto it = index.find(c);
    if (it == index.end()) {
      if (missing.empty()) missing = std::string(c);
      return;
    }
    task.text_.push_back(it->second);
  });
  if (!missing.empty()) return makeError("the text holds '" + displayToken(missing) + "', which is not in the alphabet");
  if (alphabet.size() < 2) {
    return makeError("the text has " + std::to_string(alphabet.size()) +
                     " distinct characters; next-character prediction needs at least 2");
  }
  if (static_cast<int>(task.text_.size()) < seq + 1) {
    return makeError("the text has " + std::to_string(task.text_.size()) + " characters; T = " +
                     std::to_string(seq) + " needs at least T + 1 = " + std::to_string(seq + 1));
  }
  task.cfg_.vocab = static_cast<int>(alphabet.size());
  task.alphabet_ = std::move(alphabet);
  return task;
}

int Task::vocab() const { return cfg_.vocab; }

Batch Task::batch(std::uint64_t seed, std::int64_t step, int batchSize) const {
  return generate(streamSeed(seed, static_cast<std::uint64_t>(step)), batchSize);
}

Batch Task::probe(std::uint64_t seed, int batchSize) const {
  return generate(streamSeed(seed ^ 0x50524F4245ull /*"PROBE"*/, ~0ull), batchSize);
}

Batch Task::generate(std::uint64_t s, int B) const {
  SplitMix64 rng(s);
  const int T = cfg_.seq, V = cfg_.vocab;
  Batch b;
  b.batch = B;
  b.seq = T;
  b.tokens.assign(static_cast<std::size_t>(B * T), 0);
  b.targets.assign(static_cast<std::size_t>(B * T), -1);
  for (int item = 0; item < B; ++item) {
    int* tok = b.tokens.data() + item * T;
    int* tgt = b.targets.data() + item * T;
    std::vector<int> seq(static_cast<std::size_t>(T + 1), 0);  // T+1 so the last target exists (text)
    int firstPredictable = 0, lastPredictable = T - 2;  // target positions t predict seq[t+1]
    switch (cfg_.kind) {
      case TaskKind::Induction: {
        const int k = cfg_.periodMin + below(rng, cfg_.periodMax - cfg_.periodMin + 1);
        std::vector<int> pool(static_cast<std::size_t>(V));
        for (int i = 0; i < V; ++i) pool[static_cast<std::size_t>(i)] = i;
        for (int i = 0; i < k; ++i) std::swap(pool[static_cast<std::size_t>(i)], pool[static_cast<std::size_t>(i + below(rng, V - i))]);
        for (int t = 0; t < T; ++t) seq[static_cast<std::size_t>(t)] = pool[static_cast<std::size_t>(t % k)];
        // Position t is scored only once its own token occurred before (t >= k): then the target
        // is the token after that earlier copy. At t = k - 1 nothing yet reveals the period, so
        // seq[k] = seq[0] is a guess; scoring it taught the model "guess token 0" in the first period.
        firstPredictable = k;
        break;
      }
      case TaskKind::Reverse:
      case TaskKind::Sort: {
        const int n = (T - 1) / 2, sep = V - 1;
        std::vector<int> a(static_cast<std::size_t>(n));
        for (int& v : a) v = below(rng, V - 1);
        std::vector<int> second = a;
        if (cfg_.kind == TaskKind::Reverse) std::reverse(second.begin(), second.end());
        else std::sort(second.begin(), second.end());
        for (int i = 0; i < n; ++i) seq[static_cast<std::size_t>(i)] = a[static_cast<std::size_t>(i)];
        seq[static_cast<std::size_t>(n)] = sep;
        for (int i = 0; i < n; ++i) seq[static_cast<std::size_t>(n + 1 + i)] = second[static_cast<std::size_t>(i)];
        for (int t = 2 * n + 1; t <= T; ++t) seq[static_cast<std::size_t>(t)] = sep;  // padding when T is even
        firstPredictable = n;  // SEP predicts the first output symbol
        lastPredictable = 2 * n - 1;
        break;
      }
      case TaskKind::Text: {
        const int start = below(rng, static_cast<int>(text_.size()) - T);
        for (int t = 0; t <= T; ++t) seq[static_cast<std::size_t>(t)] = text_[static_cast<std::size_t>(start + t)];
        lastPredictable = T - 1;
        break;
      }
    }
    for (int t = 0; t < T; ++t) {
      tok[t] = seq[static_cast<std::size_t>(t)];
      if (t >= firstPredictable && t <= lastPredictable) tgt[t] = seq[static_cast<std::size_t>(t + 1)];
    }
  }
  return b;
}

std::string Task::symbol(int token) const {
  if (cfg_.kind == TaskKind::Text) {
    if (token >= 0 && token < static_cast<int>(alphabet_.size())) return displayToken(alphabet_[static_cast<std::size_t>(token)]);
    return "?";
  }
  if ((cfg_.kind == TaskKind::Reverse || cfg_.kind == TaskKind::Sort) && token == cfg_.vocab - 1) return "SEP";
  return std::string("a").append(std::to_string(token));  // not "a" + string&&: GCC 12's false -Wrestrict
}

int Task::periodOf(const Batch& b, int item) {
  const int* tok = b.tokens.data() + item * b.seq;
  for (int k = 1; k < b.seq; ++k) {
    bool ok = true;
    for (int t = k; t < b.seq && ok; ++t) ok = tok[t] == tok[t - k];
    if (ok) return k;
  }
  return b.seq;
}

}  // namespace mhascope::train
