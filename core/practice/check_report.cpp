// A check's report as the command line prints it and as its --json writes it.
#include "practice/check.hpp"

#include <nlohmann/json.hpp>

#include "practice/check_parts.hpp"
#include "util/format.hpp"

namespace mhascope::practice {

const char* stageStatusName(StageCheck::Status s) {
  switch (s) {
    case StageCheck::Status::Match: return "match";
    case StageCheck::Status::Differs: return "differs";
    case StageCheck::Status::After: return "after";
    case StageCheck::Status::NotSeen: return "not seen";
  }
  return "";
}

std::string reportText(const CheckReport& r) {
  std::string s = "exercise " + r.exerciseId + ", file " + printableMessage(r.file) + "\n";
  if (r.error && (r.error->kind == LearnerError::Kind::Syntax || r.error->kind == LearnerError::Kind::Import ||
                  r.error->kind == LearnerError::Kind::Timeout || r.error->kind == LearnerError::Kind::Crash ||
                  r.error->kind == LearnerError::Kind::Load || r.error->kind == LearnerError::Kind::Memory)) {
    s += "error (" + std::string(errorKindName(r.error->kind)) + "): " + printableMessage(detail::errorWords(*r.error)) + "\n";
    if (!r.error->traceback.empty()) s += printableMessage(r.error->traceback) + "\n";
  }
  s += "cases:\n";
  for (const CaseResult& c : r.cases) {
    s += std::string(c.passed ? "  pass  " : "  FAIL  ") + c.id + " \xe2\x80\x94 " + c.title;
    if (!c.passed) s += ": " + printableMessage(c.why);
    s += "\n";
  }
  if (!r.stages.empty()) {
    s += "stages (case " + r.cases[static_cast<std::size_t>(r.shownCase)].id + "):\n";
    for (const StageCheck& st : r.stages) {
      const char* mark = st.status == StageCheck::Status::Match     ? "  ok       "
                         : st.status == StageCheck::Status::Differs ? "  DIFFERS  "
                         : st.status == StageCheck::Status::After   ? "  -        "
                                                                    : "  not seen ";
      s += mark + std::string(stageInfo(st.stage).name);
      if (st.capture) s += "  " + printableMessage(detail::captureWords(*st.capture));
      if (!st.layout.empty()) s += " as " + st.layout;
      if (st.status == StageCheck::Status::Differs && !st.shapeNote.empty()) s += "; " + st.shapeNote;
      s += "\n";
    }
  }
  if (r.diagnosis) {
    s += "diagnosis: " + r.diagnosis->title + "\n  " + printableMessage(r.diagnosis->text) + "\n";
  }
  if (!r.printed.empty()) s += "your code printed:\n" + printableMessage(r.printed) + "\n";
  s += r.summary + (r.allPassed ? " \xe2\x80\x94 all pass\n" : "\n");
  return s;
}

std::string reportJson(const CheckReport& r) {
  nlohmann::json j;
  j["exercise"] = r.exerciseId;
  j["file"] = r.file;
  j["all_passed"] = r.allPassed;
  j["summary"] = r.summary;
  j["seconds"] = r.seconds;
  j["cases"] = nlohmann::json::array();
  for (const CaseResult& c : r.cases) {
    j["cases"].push_back({{"id", c.id}, {"title", c.title}, {"passed", c.passed}, {"why", c.why}, {"seconds", c.seconds}});
  }
  j["shown_case"] = r.cases.empty() ? "" : r.cases[static_cast<std::size_t>(r.shownCase)].id;
  j["stages"] = nlohmann::json::array();
  for (const StageCheck& st : r.stages) {
    nlohmann::json s = {{"stage", stageInfo(st.stage).name}, {"status", stageStatusName(st.status)}};
    if (st.capture) {
      s["name"] = st.capture->name;
      s["line"] = st.capture->line;
      s["source"] = st.capture->source == Capture::Source::Local ? "local" : "call";
    }
    if (!st.layout.empty()) s["layout"] = st.layout;
    if (!st.shapeNote.empty()) s["shape_note"] = st.shapeNote;
    if (st.status == StageCheck::Status::Differs || st.status == StageCheck::Status::Match) {
      s["max_abs_diff"] = std::isfinite(st.maxAbsDiff) ? nlohmann::json(st.maxAbsDiff) : nlohmann::json(nullptr);
    }
    j["stages"].push_back(s);
  }
  if (r.diagnosis) {
    j["diagnosis"] = {{"mistake", r.diagnosis->mistake}, {"title", r.diagnosis->title}, {"text", r.diagnosis->text},
                      {"stage", stageInfo(r.diagnosis->stage).name}, {"line", r.diagnosis->line}};
  } else {
    j["diagnosis"] = nullptr;
  }
  if (r.error) {
    j["error"] = {{"kind", errorKindName(r.error->kind)}, {"type", r.error->type}, {"message", r.error->message},
                  {"file", r.error->file}, {"line", r.error->line}};
  } else {
    j["error"] = nullptr;
  }
  j["printed"] = r.printed;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace mhascope::practice
