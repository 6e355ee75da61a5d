// The training tasks, each a seeded generator: the batch of step n depends only on (seed, n),
// so it is the same on every machine. Targets mark the predictable positions; metrics and the
// loss count only those.
//   induction  k distinct random tokens (period k drawn from [k_min, k_max] per sequence),
//              repeated to fill T; predictable: exactly the positions t >= k, whose token already
//              occurred (its target is the token after that earlier copy); the first period and
//              its last position are not (nothing before position k reveals the period).
//   reverse    a_1 … a_n SEP a_n … a_1 (n = (T-1)/2; SEP = token V-1); predictable: after SEP.
//   sort       a_1 … a_n SEP sorted(a); predictable: after SEP.
//   text       windows of a UTF-8 file, next character; vocabulary = the file's characters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"
#include "train/model.hpp"

namespace mhascope::train {

// The text task reads at most this much text: its tokens take 4 bytes a character, and a
// character-level model of this size learns from far less.
inline constexpr std::uint64_t kMaxTextBytes = 16ull << 20;

enum class TaskKind { Induction, Reverse, Sort, Text };
const char* taskName(TaskKind k);  // "induction" | "reverse" | "sort" | "text"
Result<TaskKind> taskFromName(std::string_view name);

struct TaskConfig {
  TaskKind kind = TaskKind::Induction;
  int vocab = 64;       // ignored for text (the file decides)
  int seq = 32;         // T
  int periodMin = 6;    // induction only
  int periodMax = 16;
  std::string textPath;  // text only
};

class Task {
 public:
  // Checks settings that cannot work (T < 2*k_max, vocab < k_max, vocab < 3 for reverse/sort,
  // a text file with fewer than T+1 characters …), every problem in one message.
  static Result<Task> make(const TaskConfig& cfg);
  // For a checkpoint's text task: the alphabet stored in its metadata instead of a file.
  static Result<Task> makeText(int seq, std::vector<std::string> alphabet, std::string text);

  const TaskConfig& config() const { return cfg_; }
  int vocab() const;  // the model's V for this task
  // The training batch of step `step` (B sequences of T tokens).
  Batch batch(std::uint64_t seed, std::int64_t step, int batchSize) const;
  // The fixed probe batch used at every evaluation (independent of the training steps).
  Batch probe(std::uint64_t seed, int batchSize) const;
  // A readable label for a token: "a12", "SEP", or the character of the text task.
  std::string symbol(int token) const;
  const std::vector<std::string>& alphabet() const { return alphabet_; }  // text only
  const std::vector<int>& textTokens() const { return text_; }             // text only: the file as ids
  // The period k of each induction sequence of the last generated batch is not stored; this
  // recomputes it for sequence `item` of batch(seed, step, B) (used by tests).
  static int periodOf(const Batch& b, int item);

 private:
  Batch generate(std::uint64_t streamSeed, int batchSize) const;
  TaskConfig cfg_;
  std::vector<std::string> alphabet_;  // text: code points (UTF-8 strings), sorted
  std::vector<int> text_;              // text: the file as token ids
};

}  // namespace mhascope::train
