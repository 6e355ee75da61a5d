// The diagnosis of a failed case: the first stage whose value differs, the learner's tensor there,
// and the known mistake (lessons/mistakes.hpp) that tensor equals, with its line and its words.
#include "practice/check_parts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "util/format.hpp"

namespace mhascope::practice::detail {

namespace {

int countBlocked(const Trace& t) {
  int n = 0;
  for (std::uint8_t b : t.blocked) n += b != 0;
  return n;
}

// "your `scores` (line 31)", "the result of Tensor.div (line 48)": the tensor as a sentence's subject.
std::string subject(const std::string& who) { return who.rfind("the ", 0) == 0 ? who : "your " + who; }

}  // namespace

std::string mistakeText(Mistake m, const Trace& t, const std::string& who, const Tensor& learner) {
  const double dk = t.dk, d = t.dModel, h = t.heads;
  switch (m) {
    case Mistake::ScaleBySqrtDModel:
      return subject(who) + " holds Q K\xe1\xb5\x80 / \xe2\x88\x9a" "d_model (\xc3\xb7 " + formatFixed(std::sqrt(d), 2) + ")" +
             "; each head's dot products have d_k = " + std::to_string(t.dk) + " terms: divide by \xe2\x88\x9a" "d_k = " +
             formatFixed(std::sqrt(dk), 2) + ". Dividing by \xe2\x88\x9a" "d_model makes every head's weights flatter (by \xe2\x88\x9a" "h = " +
             formatFixed(std::sqrt(h), 2) + " in the logits).";
    case Mistake::NoScaling:
      return subject(who) + " holds Q K\xe1\xb5\x80 with no division: a dot product of d_k = " + std::to_string(t.dk) +
             " terms spreads like \xe2\x88\x9a" "d_k, so divide by \xe2\x88\x9a" "d_k = " + formatFixed(std::sqrt(dk), 2) +
             "; unscaled, the softmax is sharper than it should be and its gradients vanish.";
    case Mistake::ScaleByDk:
      return subject(who) + " holds Q K\xe1\xb5\x80 / d_k (\xc3\xb7 " + std::to_string(t.dk) + "): divide by \xe2\x88\x9a" "d_k = " +
             formatFixed(std::sqrt(dk), 2) + " \xe2\x80\x94 a dot product's spread grows like the square root of its length, not like its length.";
    case Mistake::SplitWithoutTranspose: {
      // view(B, h, T, d_k) hands head i the numbers [i·T·d_k, (i+1)·T·d_k) of each item's (T, d_model) rows.
      const int head = t.heads > 1 ? 1 : 0;
      const long long first = static_cast<long long>(head) * t.tq * t.dk, last = first + static_cast<long long>(t.tq) * t.dk - 1;
      const long long t0 = first / t.dModel, t1 = last / t.dModel;
      return "your split (" + who + ") used view(B, h, T, d_k) without the transpose: head " + std::to_string(head) +
             " received tokens " + std::to_string(t0) + (t1 != t0 ? "\xe2\x80\x93" + std::to_string(t1) : "") +
             "'s features instead of features " + std::to_string(head * t.dk) + "\xe2\x80\x93" +
             std::to_string((head + 1) * t.dk - 1) + " of every token. Split as view(B, T, h, d_k).transpose(1, 2).";
    }
    case Mistake::ViewOnTransposed:
      return "`.view` on a transposed tensor" + (who.empty() ? std::string() : " (" + who + ")") +
             ": transpose only changes the strides, and .view needs the numbers in memory order; call .contiguous() "
             "before .view, or use .reshape.";
    case Mistake::MaskIgnored:
      return subject(who) + " holds the softmax of the scores with no mask: the " + std::to_string(countBlocked(t)) +
             " blocked cells of this case still get weight. Fill the blocked scores with \xe2\x88\x92inf "
             "(masked_fill(mask, float('-inf'))) before the softmax.";
    case Mistake::MaskInverted:
      return subject(who) + " blocks the cells the mask keeps and keeps the " + std::to_string(countBlocked(t)) +
             " it blocks: in PyTorch's convention True means blocked, so fill where the mask is True (masked_fill(mask, "
             "float('-inf'))), not where it is False.";
    case Mistake::MaskedWithZero:
      return subject(who) + " sets the " + std::to_string(countBlocked(t)) +
             " blocked scores to 0, not \xe2\x88\x92inf: exp(0) = 1, so the blocked keys still get weight. Fill with "
             "float('-inf') (or a very large negative number).";
    case Mistake::CausalHidesDiagonal:
      return "your causal mask (" + who + ") also blocks each token's own key: torch.triu(…, diagonal=0) includes the "
             "diagonal; use diagonal=1. Token 0 then sees no key at all, and its row of weights is NaN.";
    case Mistake::CausalWrongDirection:
      return "your causal mask (" + who + ") blocks the past (keys before the query) and lets each token see the future; "
             "a decoder blocks the keys after the query: torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1).";
    case Mistake::MaskAfterSoftmax: {
      double worst = 0;
      int worstRow = 0;
      for (std::int64_t row = 0; row * t.tk < learner.numel(); ++row) {
        double s = 0;
        for (int k = 0; k < t.tk; ++k) s += learner.data[static_cast<std::size_t>(row * t.tk + k)];
        if (std::abs(s - 1) > std::abs(worst - 1)) {
          worst = s;
          worstRow = static_cast<int>(row % t.tq);
        }
      }
      return "the mask was applied after the softmax (" + who + "): the blocked weights are 0, but the rows no longer sum "
             "to 1 (query " + std::to_string(worstRow) + "'s row sums to " + formatFixed(worst, 2) +
             "). Fill the blocked scores with \xe2\x88\x92inf, then take the softmax.";
    }
    case Mistake::SoftmaxOverQueries:
      return "softmax over the query axis (" + who + "): the columns sum to 1, not the rows. Each query's weights over the "
             "keys must sum to 1: softmax(dim=-1).";
    case Mistake::NoMaxSubtraction: {
      float top = 0;
      int topRow = 0;
      const Tensor masked = t.copyOf(StageId::MaskedScores);
      for (std::size_t i = 0; i < masked.data.size(); ++i)
        if (std::isfinite(masked.data[i]) && masked.data[i] > top) {
          top = masked.data[i];
          topRow = static_cast<int>((i / static_cast<std::size_t>(t.tk)) % static_cast<std::size_t>(t.tq));
        }
      std::int64_t nan = 0;
      for (float v : learner.data) nan += std::isnan(v);
      return "the max was not subtracted (" + who + "): at these scores (up to " + formatFixed(top, 0) + ", in query " +
             std::to_string(topRow) + "'s row) exp overflows float32 past 88.7, and inf / inf gives NaN in " +
             std::to_string(nan) + " weights. Subtract each row's maximum before exp (torch.softmax does).";
    }
    case Mistake::SumHeads:
      return "the heads were summed, not concatenated (" + who + "): shape (B, T, d_k) = " + shapeText(learner.shape) +
             " where the merge is (B, T, d_model). Put the heads side by side: transpose(1, 2).reshape(B, T, d_model).";
    case Mistake::MergeWithoutTranspose:
      return "your merge (" + who + ") reshaped (B, h, T, d_k) to (B, T, d_model) without the transpose back: token 0's row "
             "holds head 0's first tokens. Transpose to (B, T, h, d_k) first: transpose(1, 2).reshape(B, T, d_model).";
    case Mistake::NoOutputProjection:
      return "no output projection: your output (" + who + ") equals the merged heads. Multiply by W_o (self.W_o(x)): it is "
             "the layer that mixes what the heads found.";
    case Mistake::ProjectionTransposed:
      return subject(who) + " holds X W_q\xe1\xb5\x80: here the weights are (d_in, d_out) and y = X W. (nn.Linear stores "
             "its weight as (out, in) and computes x W\xe1\xb5\x80; do not mix the two conventions.)";
    case Mistake::KvHeadsTiled: {
      const int N = t.kvHeads > 0 ? t.kvHeads : t.heads;
      return "your K/V heads (" + who + ") repeat as a tile: query head i reads K/V head i mod " + std::to_string(N) +
             ", where grouped-query attention gives it head i // (h/N) (query heads 0\xe2\x80\x93" + std::to_string(t.heads / N - 1) +
             " share K/V head 0). Use repeat_interleave(h // N, dim=1).";
    }
    case Mistake::RopeInterleaved:
      return "your RoPE (" + who + ") turns the pairs (2i, 2i + 1); this exercise's convention (rotate-half, as Hugging Face "
             "Llama) pairs feature i with feature i + d_k/2 = i + " + std::to_string(t.dk / 2) + ".";
    case Mistake::RopeOnQueriesOnly:
      return subject(who) + " uses rotated queries but keys that were not rotated: rotate k as well, so that a query at t and "
             "a key at j meet at the angle (t \xe2\x88\x92 j)\xc2\xb7\xce\xb8 whatever t is.";
    case Mistake::CacheNotKept:
      return "each decoding step attended only to its own token (" + who + "): step t must append k_t and v_t to the cache "
             "and attend over all t + 1 cached keys. Your outputs equal each token's own value through W_o.";
    case Mistake::NoDivisibilityCheck:
      return "d_model is not divisible by h and your code ran: d_k = d_model // h drops the remainder's features. Raise "
             "ValueError when d_model % num_heads != 0.";
  }
  return "";
}

namespace {

struct Found {
  Mistake mistake;
  int capture = -1;  // the learner's tensor that equals the mistake's stage (-1: the returned tensor)
  bool outputAgrees = false;
  Tensor stageTensor;
  int line = 0;      // the line where the mistaken computation starts
};

bool sameShape(const Tensor& a, const Tensor& b) { return a.shape == b.shape; }

// A local variable that only renames a tensor of its function: no torch call of that function on
// its line, and its value an earlier local's.
bool isAlias(const CaseRun& run, std::size_t i) {
  const Capture& c = run.captures[i];
  if (c.source != Capture::Source::Local) return false;
  for (const Capture& o : run.captures)
    if (o.source == Capture::Source::Call && o.line == c.line && o.function == c.function) return false;
  for (std::size_t j = 0; j < i; ++j) {
    const Capture& o = run.captures[j];
    if (o.source == Capture::Source::Local && o.function == c.function && o.name != c.name && sameShape(o.value, c.value) &&
        fitTo(c.value, o.value, 1e-7, true).found) {
      return true;
    }
  }
  return false;
}

// Which of the learner's tensors equal to the mistake's stage is the mistaken one (`right`: the
// captures equal to a right stage). One no right stage equals: the first. Else the mistake left a
// step out (no scaling, no mask, no W_o) and the learner passed a right tensor on: the first local
// that renames it, else the last of its shape.
int pickCapture(const CaseRun& run, const std::vector<bool>& right, const Tensor& stage, double tol) {
  int firstNew = -1, firstAlias = -1, lastSameShape = -1, firstAny = -1;
  for (std::size_t i = 0; i < run.captures.size(); ++i) {
    const Capture& c = run.captures[i];
    if (!fitTo(c.value, stage, tol, true).found) continue;
    const int n = static_cast<int>(i);
    if (firstAny < 0) firstAny = n;
    if (!right[i] && firstNew < 0) firstNew = n;
    if (right[i] && firstAlias < 0 && sameShape(c.value, stage) && isAlias(run, i)) firstAlias = n;
    if (sameShape(c.value, stage)) lastSameShape = n;
  }
  if (firstNew >= 0) return firstNew;
  if (firstAlias >= 0) return firstAlias;
  return lastSameShape >= 0 ? lastSameShape : firstAny;
}

// The mistaken line: where the mistaken code made one of the tensors it makes before the stage
// (a wrong causal mask, a softmax's exponentials, RoPE's pairs); for a step left out (the tensor a
// right one passed on under no new name), the line that consumed it: where the weights the mistake
// leads to were made; else where the stage's tensor was made.
int mistakeLine(const CaseRun& run, const std::vector<bool>& right, int pick, const MistakeOutcome& o, double tol) {
  for (const Tensor& e : o.earlier)
    for (const Capture& c : run.captures)
      if (fitTo(c.value, e, tol).found) return c.line;
  if (pick < 0) return 0;
  const auto p = static_cast<std::size_t>(pick);
  if (right[p] && !isAlias(run, p) && !o.weights.data.empty()) {
    for (std::size_t i = 0; i < run.captures.size(); ++i)
      if (!right[i] && fitTo(run.captures[i].value, o.weights, tol, true).found) return run.captures[i].line;
  }
  return run.captures[p].line;
}

// Every computed mistake one of the learner's tensors equals. A tensor equal to a right stage too
// counts only when the learner's output is the one the mistake gives; then the mistakes whose
// output agrees come first, and the earliest in the pipeline.
std::optional<Found> findMistake(const Trace& t, const CaseRun& run, const std::vector<bool>& used, double tol) {
  std::vector<Found> found;
  for (const MistakeInfo& info : allMistakes()) {
    if (!info.computed) continue;
    std::optional<MistakeOutcome> o = computeMistake(t, info.id);
    if (!o) continue;
    const bool agrees = run.output && fitTo(*run.output, o->output, tol).found;
    const int pick = pickCapture(run, used, o->stage, tol);
    if (pick >= 0 && (agrees || !used[static_cast<std::size_t>(pick)])) {
      found.push_back(Found{info.id, pick, agrees, o->stage, mistakeLine(run, used, pick, *o, tol)});
    } else if (pick < 0 && agrees && info.stage == StageId::Output) {
      // A mistake at the output (no projection) may show in the returned tensor alone.
      found.push_back(Found{info.id, -1, true, o->stage, 0});
    }
  }
  if (found.empty()) return std::nullopt;
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.outputAgrees != b.outputAgrees) return a.outputAgrees;
    return static_cast<int>(mistakeInfo(a.mistake).stage) < static_cast<int>(mistakeInfo(b.mistake).stage);
  });
  return found.front();
}

}  // namespace

std::string errorWords(const LearnerError& e) {
  if (e.type.empty()) return e.message.empty() ? std::string(errorKindName(e.kind)) : e.message;  // it says where
  std::string s = e.type;
  if (e.line > 0) s += " at line " + std::to_string(e.line);
  if (!e.message.empty()) s += ": " + e.message;
  return s;
}

namespace {

bool isViewOnTransposed(const LearnerError& e) {
  return e.kind == LearnerError::Kind::Exception && e.message.find("view size is not compatible") != std::string::npos;
}

// The stages after the first difference are not checked; those before it that no tensor equals
// were kept in no variable.
void markAround(std::vector<StageCheck>& stages, std::size_t differs) {
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (i < differs) {
      if (stages[i].status != StageCheck::Status::Match) stages[i].status = StageCheck::Status::NotSeen;
    } else if (i > differs) {
      stages[i].status = StageCheck::Status::After;
      stages[i].capture.reset();
      stages[i].learner = Tensor();
      stages[i].difference = Tensor();
      stages[i].layout.clear();
    }
  }
  stages[differs].status = StageCheck::Status::Differs;
}

std::size_t indexOf(const std::vector<StageCheck>& stages, StageId id) {
  for (std::size_t i = 0; i < stages.size(); ++i)
    if (stages[i].stage == id) return i;
  return stages.size();
}

}  // namespace

void diagnose(CheckReport& report, const Trace& t, const CaseRun& run, StageMatch& m, double tol) {
  std::vector<StageCheck>& stages = m.stages;
  std::size_t lastMatch = stages.size();
  for (std::size_t i = 0; i < stages.size(); ++i)
    if (stages[i].status == StageCheck::Status::Match) lastMatch = i;
  std::size_t differs = lastMatch == stages.size() ? 0 : lastMatch + 1;
  if (differs >= stages.size()) differs = stages.size() - 1;

  if (std::optional<Found> f = findMistake(t, run, m.exact, tol)) {
    const MistakeInfo& info = mistakeInfo(f->mistake);
    std::size_t at = indexOf(stages, info.stage);
    if (at == stages.size()) at = differs;
    StageCheck& sc = stages[at];
    const Capture* c = f->capture >= 0 ? &run.captures[static_cast<std::size_t>(f->capture)] : nullptr;
    sc.capture.reset();
    if (c) sc.capture = *c;
    const Tensor e = t.copyOf(info.stage);
    Tensor learnerTensor = c ? c->value : *run.output;
    Capture shown;
    if (c) shown = *c;
    else {
      shown.name = "the returned tensor";
      shown.value = learnerTensor;
    }
    sc.layout.clear();
    fillTensors(sc, shown, fitTo(shown.value, e, tol), e);
    markAround(stages, at);
    Diagnosis d;
    d.mistake = info.key;
    d.title = info.title;
    d.stage = info.stage;
    d.line = f->line;
    std::string who = c ? captureWords(*c) : std::string("the returned tensor");
    if (c && f->line > 0 && f->line != c->line) who += ", from line " + std::to_string(f->line);
    d.text = mistakeText(f->mistake, t, who, c ? c->value : f->stageTensor);
    if (!f->outputAgrees && run.output) {
      d.text += " (Your output also differs from what this mistake alone gives: look for a second one after line " +
                std::to_string(d.line) + ".)";
    }
    report.diagnosis = d;
    return;
  }
  // No known mistake: the first unmatched tensor made after the last match takes the stage's place.
  const int after = lastMatch < stages.size() && stages[lastMatch].capture ? stages[lastMatch].capture->order : -1;
  const Tensor e = t.copyOf(stages[differs].stage);
  const Capture* pick = nullptr;
  for (const Capture& c : run.captures) {
    if (c.order <= after) continue;
    const auto i = static_cast<std::size_t>(&c - run.captures.data());
    if (m.used[i]) continue;
    if (!pick) pick = &c;
    if (c.value.numel() == e.numel()) {
      pick = &c;
      break;
    }
  }
  StageCheck& sc = stages[differs];
  markAround(stages, differs);
  if (pick) {
    sc.capture = *pick;
    fillTensors(sc, *pick, fitTo(pick->value, e, tol), e);
  }
  if (run.error && isViewOnTransposed(*run.error)) {
    Diagnosis d;
    d.mistake = mistakeInfo(Mistake::ViewOnTransposed).key;
    d.title = mistakeInfo(Mistake::ViewOnTransposed).title;
    d.stage = StageId::Concat;
    d.line = run.error->line;
    d.text = mistakeText(Mistake::ViewOnTransposed, t, run.error->line > 0 ? "line " + std::to_string(run.error->line) : "", {});
    const std::size_t at = indexOf(stages, StageId::Concat);
    if (at < stages.size() && at >= differs) {
      stages[differs].status = StageCheck::Status::NotSeen;
      markAround(stages, at);
    }
    report.diagnosis = d;
    return;
  }
  Diagnosis d;
  d.stage = sc.stage;
  d.line = pick ? pick->line : 0;
  if (run.error) {
    d.title = "Your code stopped";
    d.text = errorWords(*run.error);
  } else if (pick && !sc.shapeNote.empty()) {
    d.title = "Wrong shape";
    d.text = subject(captureWords(*pick)) + " has " + sc.shapeNote + " for " + stageInfo(sc.stage).title +
             ", not a mistake I know.";
  } else if (pick) {
    d.title = "Differs";
    d.text = subject(captureWords(*pick)) + " differs from the expected " + std::string(stageInfo(sc.stage).title) + " by " +
             formatFixed(sc.maxAbsDiff, 4) + " (max |\xce\x94|), not a mistake I know.";
  } else {
    d.title = "Not found";
    d.text = "no tensor of yours after the last matching stage takes the place of " + std::string(stageInfo(sc.stage).title) +
             ", and the output differs: not a mistake I know.";
  }
  report.diagnosis = d;
}

}  // namespace mhascope::practice::detail
