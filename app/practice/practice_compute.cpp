// The Practice mode's update step and actions (practice_compute.hpp).
#include "practice/practice_compute.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "io/file_io.hpp"
#include "io/presets.hpp"
#include "practice/exercises.hpp"

namespace mhascope::app {

namespace {

constexpr double kPollSeconds = 0.3;

PracticeKey statOf(const PracticeState& p) {
  PracticeKey k;
  k.exercise = p.exercise;
  k.file = p.file;
  k.again = p.again;
  std::error_code ec;
  const auto size = std::filesystem::file_size(p.file, ec);
  if (ec) return k;  // missing: size -1, nothing to check
  const auto t = std::filesystem::last_write_time(p.file, ec);
  if (ec) return k;
  k.size = static_cast<std::int64_t>(size);
  k.mtimeNs = static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  return k;
}

}  // namespace

void PracticeCompute::update(PracticeState& p, double now, bool sync) {
  if (!p.progressLoaded) {
    p.progressLoaded = true;
    if (!p.progressPath.empty()) {
      if (auto loaded = practice::loadProgress(p.progressPath)) {
        p.progress = *loaded;
      } else {
        p.message = loaded.error().message + "; progress is not kept this time";
        p.messageIsError = true;
        p.progressPath.clear();  // never overwrite a file we could not read
      }
    }
    if (auto f = p.progress.files.find(p.exercise); f != p.progress.files.end() && p.file.empty()) p.file = f->second;
  }
  job_.collect(p.check);
  if (p.check.resultSerial != p.checkedSerial) {  // a report came in: the watch line says when
    p.checkedSerial = p.check.resultSerial;
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
    localtime_r(&t, &local);
    char hms[16];
    std::strftime(hms, sizeof hms, "%H:%M:%S", &local);
    p.checkedAt = hms;
  }
  if (p.starterEdit.empty()) {  // where "Create starter" proposes to write
    const char* home = std::getenv("HOME");
    p.starterEdit = std::string(home && *home ? home : ".") + "/mhascope-practice/" + p.exercise + ".py";
  }
  if (p.showSolution && p.solutionFor != p.exercise) {
    p.solutionFor = p.exercise;
    const practice::Exercise* e = practice::findExercise(p.exercise);
    auto text = e ? readFile(assetsDir() + "/practice/" + e->solutionAsset, 1u << 20) : Result<std::string>(makeError("no exercise"));
    p.solutionText = text ? *text : "cannot read the reference solution: " + text.error().message;
  }
  if (!p.active || p.file.empty()) return;
  if (now >= p.nextPoll || sync) {
    p.nextPoll = now + kPollSeconds;
    p.seen = statOf(p);
  }
  const practice::Exercise* e = practice::findExercise(p.exercise);
  std::optional<PracticeKey> want;
  if (e && p.seen.size >= 0 && p.seen.exercise == p.exercise && p.seen.file == p.file) want = p.seen;
  JobRule rule;
  rule.sync = sync;
  job_.request(p.check, want, [e](const PracticeKey& key) {
    return [e, key](const std::shared_ptr<JobTicket>& ticket) {
      JobOutcome<PracticeKey, practice::CheckReport> out;
      out.key = key;
      try {
        auto r = practice::checkFile(*e, key.file, {}, &ticket->cancel);
        if (r) out.result = std::make_shared<const practice::CheckReport>(std::move(*r));
        else out.error = r.error().message;
      } catch (const std::exception& ex) {
        out.error = std::string("the check failed: ") + ex.what();
      }
      out.cancelled = ticket->cancel.load() && !out.result;
      return out;
    };
  }, rule);
}

void createStarter(PracticeState& p) {
  const practice::Exercise* e = practice::findExercise(p.exercise);
  if (!e) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string path = p.starterEdit;
  if (path.empty()) {
    p.message = "name the file to create";
    p.messageIsError = true;
    return;
  }
  if (fs::exists(path, ec)) {
    watchFile(p, path);
    p.message = path + " already exists: mhascope never replaces it, and checks it on every save";
    p.messageIsError = false;
    return;
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  auto text = readFile(assetsDir() + "/practice/" + e->starterAsset, 1u << 20);
  if (!text) {
    p.message = text.error().message;
    p.messageIsError = true;
    return;
  }
  if (auto s = writeFileAtomic(path, *text); !s) {
    p.message = s.error().message;
    p.messageIsError = true;
    return;
  }
  watchFile(p, path);
  p.message = "wrote " + path + ": open it in your editor; every save is checked";
  p.messageIsError = false;
}

void watchFile(PracticeState& p, std::string path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).string();
  p.file = ec ? path : absolute;
  p.fileEdit = p.file;
  p.nextPoll = 0;
  p.shownStage = -1;
  p.progress.files[p.exercise] = p.file;
  p.message.clear();  // the watch line says it
  p.messageIsError = false;
  saveProgress(p);
}

void saveProgress(PracticeState& p) {
  if (p.progressPath.empty()) return;
  if (auto s = practice::saveProgress(p.progressPath, p.progress); !s) {
    p.message = "progress not saved: " + s.error().message;
    p.messageIsError = true;
  }
}

}  // namespace mhascope::app
