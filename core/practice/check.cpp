// Checking a learner's file: every case of the exercise run in a child process and judged, and the
// shown case's stages matched and diagnosed (the parts: check_parts.hpp).
#include "practice/check.hpp"

#include <chrono>
#include <cmath>

#include "practice/check_parts.hpp"
#include "util/format.hpp"

namespace mhascope::practice {

namespace detail {
namespace {

// A case that must raise did not: it ran, or got as far as the weights, which fit no module built
// with a remainder dropped.
bool didNotRaise(const LearnerError& e) { return e.kind == LearnerError::Kind::NoRaise || e.kind == LearnerError::Kind::Load; }

CaseResult judgeCase(const BuiltCase& bc, const CaseRun* run, double tol) {
  CaseResult r;
  r.id = bc.spec->id;
  r.title = bc.spec->title;
  if (!run) {
    r.why = "not run (the run stopped before it)";
    return r;
  }
  r.seconds = run->seconds;
  if (bc.spec->mustRaise) {
    r.passed = !run->error;
    if (run->error) r.why = didNotRaise(*run->error) ? "did not raise: d_model " + std::to_string(bc.spec->dModel) +
                                                           " is not divisible by h " + std::to_string(bc.spec->heads)
                                                     : errorWords(*run->error);
    return r;
  }
  if (run->error) {
    r.why = errorWords(*run->error);
    return r;
  }
  if (!run->output || !bc.expected) {
    r.why = "returned nothing";
    return r;
  }
  const Tensor& e = bc.expected->tensor(StageId::Output);
  if (run->output->numel() != e.numel()) {
    r.why = "returned shape " + shapeText(run->output->shape) + ", expected " + shapeText(e.shape);
    return r;
  }
  Tensor got = *run->output;
  r.maxAbsDiff = maxAbsDifference(got, e);
  std::int64_t nan = 0;
  for (float v : got.data) nan += !std::isfinite(v);
  r.passed = r.maxAbsDiff <= tol * (1.0 + scaleOf(e));
  if (!r.passed) {
    r.why = nan > 0 ? std::to_string(nan) + " of the output's " + std::to_string(got.numel()) + " numbers are NaN or inf"
                    : "output differs by " + formatFixed(r.maxAbsDiff, 4) + " (max |\xce\x94|)";
  }
  return r;
}


}  // namespace
}  // namespace detail

std::string declaredExercise(std::string_view text) {
  const std::string_view marker = "# mhascope exercise:";
  for (int line = 0; line < 5 && !text.empty(); ++line) {
    const std::size_t end = text.find('\n');
    std::string_view l = text.substr(0, end);
    if (l.substr(0, marker.size()) == marker) {
      std::string_view id = l.substr(marker.size());
      while (!id.empty() && (id.front() == ' ' || id.front() == '\t')) id.remove_prefix(1);
      while (!id.empty() && (id.back() == ' ' || id.back() == '\r' || id.back() == '\t')) id.remove_suffix(1);
      return std::string(id);
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return "";
}

Result<CheckReport> checkFile(const Exercise& exercise, const std::string& file, const CheckOptions& options,
                              const std::atomic<bool>* cancel) {
  const auto start = std::chrono::steady_clock::now();
  CheckReport report;
  report.exerciseId = exercise.id;
  report.file = file;
  std::vector<detail::BuiltCase> built;
  for (const PracticeCase& c : exercise.cases) {
    built.push_back(detail::buildCase(c));
    if (!built.back().buildError.empty()) return makeError(built.back().buildError);
  }
  LearnerRequest req;
  req.file = file;
  req.exercise = &exercise;
  req.limits = options.limits;
  req.python = options.python;
  req.harness = options.harness;
  for (const detail::BuiltCase& b : built) req.cases.push_back(b.inputs);
  Result<LearnerRun> ran = runLearner(req, cancel);
  if (!ran) return ran.error();
  const LearnerRun& run = *ran;
  report.printed = run.printed;
  report.error = run.error;
  int passed = 0;
  for (std::size_t i = 0; i < built.size(); ++i) {
    const CaseRun* cr = nullptr;
    for (const CaseRun& r : run.cases)
      if (r.caseId == built[i].spec->id) cr = &r;
    report.cases.push_back(detail::judgeCase(built[i], cr, options.tolerance));
    passed += report.cases.back().passed;
  }
  report.allPassed = passed == static_cast<int>(built.size()) && !run.error;
  // The shown case: the first failing one with stages to show, else the first.
  report.shownCase = 0;
  for (std::size_t i = 0; i < built.size(); ++i) {
    if (!report.cases[i].passed && built[i].expected && !built[i].spec->decode) {
      report.shownCase = static_cast<int>(i);
      break;
    }
  }
  const detail::BuiltCase& shown = built[static_cast<std::size_t>(report.shownCase)];
  const CaseRun* shownRun = nullptr;
  for (const CaseRun& r : run.cases)
    if (r.caseId == shown.spec->id) shownRun = &r;
  if (shown.expected) {
    report.expected = *shown.expected;
    if (shownRun) {
      report.loads = shownRun->loads;
      if (shownRun->error && !report.error) report.error = shownRun->error;
      detail::StageMatch m = detail::matchStages(report.expected, *shownRun, options.tolerance);
      if (!report.cases[static_cast<std::size_t>(report.shownCase)].passed) {
        detail::diagnose(report, report.expected, *shownRun, m, options.tolerance);
      }
      report.stages = std::move(m.stages);
    }
  }
  // The shown case passes but another fails: a case of its own kind.
  if (!report.diagnosis && !report.allPassed) {
    for (std::size_t i = 0; i < built.size(); ++i) {
      if (report.cases[i].passed) continue;
      const CaseRun* cr = nullptr;
      for (const CaseRun& r : run.cases)
        if (r.caseId == built[i].spec->id) cr = &r;
      if (!cr) continue;
      if (built[i].spec->mustRaise && cr->error && detail::didNotRaise(*cr->error)) {
        Diagnosis d;
        d.mistake = mistakeInfo(Mistake::NoDivisibilityCheck).key;
        d.title = mistakeInfo(Mistake::NoDivisibilityCheck).title;
        d.stage = mistakeInfo(Mistake::NoDivisibilityCheck).stage;
        d.text = "case " + built[i].spec->id + ": d_model = " + std::to_string(built[i].spec->dModel) +
                 " is not divisible by h = " + std::to_string(built[i].spec->heads) + " and your code ran: d_k = " +
                 std::to_string(built[i].spec->dModel / std::max(1, built[i].spec->heads)) +
                 " drops the remainder's features. Raise ValueError when d_model % num_heads != 0.";
        report.diagnosis = d;
        break;
      }
      if (built[i].spec->decode && built[i].expected && cr->output) {
        if (auto o = computeMistake(*built[i].expected, Mistake::CacheNotKept); o && detail::fitTo(*cr->output, o->output, options.tolerance).found) {
          Diagnosis d;
          d.mistake = mistakeInfo(Mistake::CacheNotKept).key;
          d.title = mistakeInfo(Mistake::CacheNotKept).title;
          d.stage = StageId::Output;
          d.text = "case " + built[i].spec->id + ": " + detail::mistakeText(Mistake::CacheNotKept, *built[i].expected, "step by step", {});
          report.diagnosis = d;
          break;
        }
      }
    }
  }
  // The summary line.
  report.summary = std::to_string(passed) + " of " + std::to_string(built.size()) + " cases pass";
  for (const StageCheck& s : report.stages) {
    if (s.status != StageCheck::Status::Differs) continue;
    report.summary += std::string("; first difference at ") + stageInfo(s.stage).name;
    if (s.capture && s.capture->line > 0) report.summary += " (line " + std::to_string(s.capture->line) + ")";
  }
  if (report.diagnosis && !report.diagnosis->mistake.empty()) report.summary += ": " + report.diagnosis->title;
  if (report.error && report.error->kind != LearnerError::Kind::Exception && report.cases.empty()) {
    report.summary = detail::errorWords(*report.error);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}


}  // namespace mhascope::practice
