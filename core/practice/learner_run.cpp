// The learner's code run in a child process (see learner_run.hpp): a temporary folder with the
// request and the cases' arrays, Debian's python3 started on the harness with fork + exec under
// limits, the parent waiting with a wall-clock limit and a cancel flag, then the harness's manifest
// and arrays read back. Nothing here is process-wide: no signal handler, no global state, every
// file descriptor opened close-on-exec, so several runs may go at once from different threads.
//
// [SECTION] The temporary folder and the request
// [SECTION] The child process: limits, environment, waiting, killing
// [SECTION] Reading back: the manifest, the arrays, what stopped the run

#include "practice/learner_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "io/presets.hpp"
#include "io/strict_json.hpp"

namespace mhascope::practice {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kFileSizeLimit = 512ull << 20;  // RLIMIT_FSIZE: any one file the child writes
constexpr std::uint64_t kManifestBytes = 64ull << 20;
constexpr double kDumpGraceSeconds = 0.15;  // between asking for the Python stack and killing

std::string errnoText(int err) { return std::error_code(err, std::system_category()).message(); }

//-----------------------------------------------------------------------------------------------
// [SECTION] The temporary folder and the request
//-----------------------------------------------------------------------------------------------

// The run's folder, removed with everything in it whatever happens (the learner's files too).
class TemporaryFolder {
 public:
  static Result<TemporaryFolder> create() {
    const char* env = std::getenv("TMPDIR");
    const std::string base = (env && *env) ? env : "/tmp";
    std::string pattern = base + "/mhascope-practice-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      const int err = errno;
      return makeError("cannot make a temporary folder in " + base + ": " + errnoText(err));
    }
    return TemporaryFolder(pattern);
  }
  TemporaryFolder(TemporaryFolder&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  TemporaryFolder& operator=(TemporaryFolder&&) = delete;
  TemporaryFolder(const TemporaryFolder&) = delete;
  ~TemporaryFolder() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  explicit TemporaryFolder(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

// A name the child may only use inside the folder: letters, digits, '_', '-', '.', not hidden.
bool plainFileName(std::string_view name) {
  if (name.empty() || name.size() > 200 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

Status writeRequest(const LearnerRequest& request, const TemporaryFolder& dir) {
  const Exercise& ex = *request.exercise;
  Json cases = Json::array();
  for (std::size_t i = 0; i < request.cases.size(); ++i) {
    const CaseInputs& c = request.cases[i];
    Json arrays = Json::object();
    for (const auto& [name, tensor] : c.arrays) {
      std::string fileName = "in" + std::to_string(i) + "_" + name + ".npy";
      if (!plainFileName(fileName)) return makeError("case '" + c.caseId + "': the array name '" + name + "' is not a plain name");
      if (auto saved = saveNpy(dir.file(fileName), tensor); !saved) return saved.error();
      arrays[name] = fileName;
    }
    cases.push_back({{"id", c.caseId}, {"arrays", arrays}, {"mustRaise", c.mustRaise}, {"decode", c.decode},
                     {"dModel", c.dModel}, {"heads", c.heads}, {"kvHeads", c.kvHeads}});
  }
  const Json j = {
      {"version", 1},
      {"file", request.file},
      {"framework", ex.framework == Framework::Torch ? "torch" : "numpy"},
      {"entry", ex.entry},
      {"initArgs", ex.initArgs},
      {"callArgs", ex.callArgs},
      {"maskArg", ex.maskArg},
      {"stepMethod", ex.stepMethod},
      {"limits",
       {{"outputBytes", request.limits.outputBytes},
        {"maxCaptures", request.limits.maxCaptures},
        {"captureBytes", request.limits.captureBytes},
        {"memoryBytes", request.limits.memoryBytes}}},
      {"cases", cases},
  };
  std::string text;
  try {
    text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return makeError(std::string("cannot write the practice request: ") + e.what());
  }
  return writeFileAtomic(dir.file("request.json"), text);
}

//-----------------------------------------------------------------------------------------------
// [SECTION] The child process: limits, environment, waiting, killing
//-----------------------------------------------------------------------------------------------

struct ChildOutcome {
  bool timedOut = false, cancelled = false;
  int exitCode = -1;  // when it exited
  int signal = 0;     // when a signal ended it (0: it exited)
  double seconds = 0;
};

std::string signalName(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

// Everything the child needs is built before fork: after it, in a process that may have other
// threads, the child calls only async-signal-safe functions until exec.
struct ChildPlan {
  std::vector<std::string> argvText, envText;
  std::vector<char*> argv, envp;
  std::string cwd;
  rlimit data{}, cpu{}, fsize{}, core{};
};

ChildPlan makePlan(const LearnerRequest& request, const std::string& harness, const TemporaryFolder& dir) {
  ChildPlan plan;
  // -I: no user site, no PYTHON* variables, not the script's folder on the path; -B: no .pyc
  // written beside the learner's files (-I ignores PYTHONDONTWRITEBYTECODE, kept for what it starts).
  plan.argvText = {request.python, "-I", "-B", harness, "request.json"};
  plan.envText = {"PATH=/usr/bin:/bin",
                  "HOME=" + dir.path(),
                  "TMPDIR=" + dir.path(),
                  "OMP_NUM_THREADS=1",
                  "MKL_NUM_THREADS=1",
                  "OPENBLAS_NUM_THREADS=1",
                  "PYTHONDONTWRITEBYTECODE=1",
                  "PYTHONIOENCODING=utf-8",
                  "LC_ALL=C.UTF-8"};
  for (auto& s : plan.argvText) plan.argv.push_back(s.data());
  plan.argv.push_back(nullptr);
  for (auto& s : plan.envText) plan.envp.push_back(s.data());
  plan.envp.push_back(nullptr);
  plan.cwd = dir.path();
  const auto memory = static_cast<rlim_t>(request.limits.memoryBytes);
  plan.data = {memory, memory};
  // The CPU limit backs the wall-clock one up should the parent itself be stopped.
  const auto cpu = static_cast<rlim_t>(std::ceil(std::max(0.0, request.limits.wallSeconds)) + 1);
  plan.cpu = {cpu, cpu + 1};
  plan.fsize = {kFileSizeLimit, kFileSizeLimit};
  plan.core = {0, 0};
  return plan;
}

[[noreturn]] void childAfterFork(const ChildPlan& plan, int devNull, int out, int err, int report) {
  ::setpgid(0, 0);  // its own process group: one kill reaches whatever it starts
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const int sig : {SIGPIPE, SIGXFSZ, SIGINT, SIGTERM, SIGHUP, SIGUSR1}) ::signal(sig, SIG_DFL);
  bool ok = ::dup2(devNull, 0) >= 0 && ::dup2(out, 1) >= 0 && ::dup2(err, 2) >= 0 && ::chdir(plan.cwd.c_str()) == 0;
  // Whatever else the parent had open (without close-on-exec) is not the child's to keep; a kernel
  // before 5.11 does not know the flag, and then only those descriptors stay.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  ok = ok && ::setrlimit(RLIMIT_DATA, &plan.data) == 0 && ::setrlimit(RLIMIT_CPU, &plan.cpu) == 0 &&
       ::setrlimit(RLIMIT_FSIZE, &plan.fsize) == 0 && ::setrlimit(RLIMIT_CORE, &plan.core) == 0;
  if (ok) ::execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  const int code = errno;
  [[maybe_unused]] const auto n = ::write(report, &code, sizeof code);
  ::_exit(127);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Result<ChildOutcome> runChild(const ChildPlan& plan, const TemporaryFolder& dir, double wallSeconds,
                              const std::atomic<bool>* cancel) {
  Fd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd out(::open(dir.file("stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  Fd err(::open(dir.file("stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (devNull.get() < 0 || out.get() < 0 || err.get() < 0) {
    const int e = errno;
    return makeError("cannot open the child's files in " + dir.path() + ": " + errnoText(e));
  }
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
    const int e = errno;
    return makeError("cannot start " + plan.argvText[0] + ": " + errnoText(e));
  }
  Fd reportRead(pipeFds[0]), reportWrite(pipeFds[1]);

  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    return makeError("cannot start " + plan.argvText[0] + ": fork failed: " + errnoText(e));
  }
  if (pid == 0) childAfterFork(plan, devNull.get(), out.get(), err.get(), reportWrite.get());
  ::setpgid(pid, pid);  // also here, so the group exists before any kill below whichever runs first
  reportWrite.reset();
  int execErrno = 0;
  ssize_t got;
  do {
    got = ::read(reportRead.get(), &execErrno, sizeof execErrno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof execErrno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return makeError("cannot run " + plan.argvText[0] + ": " + errnoText(execErrno));
  }

  ChildOutcome outcome;
  const auto deadline = start + std::chrono::duration<double>(wallSeconds);
  auto pause = std::chrono::milliseconds(2);
  Clock::time_point killAt{};  // set once the run is out of time: the stack was asked for, the kill is due
  for (;;) {
    // WNOWAIT: the exited child stays a zombie, so its process-group id cannot be reused before the
    // group is killed below (whatever it started in the background goes with it).
    siginfo_t info{};
    const int waited = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (waited == 0 && info.si_pid == pid) break;
    if (waited != 0 && errno != EINTR) {  // reaped by someone else's waitpid(-1): nothing left to wait for
      const int e = errno;
      ::kill(-pid, SIGKILL);
      return makeError("lost the Python process " + std::to_string(pid) + ": " + errnoText(e));
    }
    const auto now = Clock::now();
    if (cancel && cancel->load() && !outcome.cancelled) {
      outcome.cancelled = true;
      ::kill(-pid, SIGKILL);
    } else if (!outcome.timedOut && !outcome.cancelled && now >= deadline) {
      outcome.timedOut = true;
      ::kill(pid, SIGUSR1);  // the harness's faulthandler writes the Python stack: the learner's line
      killAt = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kDumpGraceSeconds));
    } else if (outcome.timedOut && killAt != Clock::time_point{} && now >= killAt) {
      ::kill(-pid, SIGKILL);
      killAt = Clock::time_point{};
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  if (WIFEXITED(status)) outcome.exitCode = WEXITSTATUS(status);
  return outcome;
}

//-----------------------------------------------------------------------------------------------
// [SECTION] Reading back: the manifest, the arrays, what stopped the run
//-----------------------------------------------------------------------------------------------

// Lenient field readers: the manifest is our harness's, but the learner's code runs in the same
// folder; a field of the wrong type reads as its default rather than throwing.
std::string text(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
int integer(const Json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  return std::isfinite(v) && std::fabs(v) < 1e9 ? static_cast<int>(v) : 0;
}
double number(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
bool boolean(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
// The elements of j[key] when it is an array, else none.
std::vector<const Json*> elements(const Json& j, const char* key) {
  std::vector<const Json*> out;
  const auto it = j.find(key);
  if (it != j.end() && it->is_array()) {
    for (const Json& e : *it) out.push_back(&e);
  }
  return out;
}
std::optional<LearnerError> parseError(const Json& j);
std::optional<LearnerError> parseErrorAt(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() ? parseError(*it) : std::nullopt;
}

std::optional<LearnerError::Kind> kindFromName(std::string_view name) {
  using K = LearnerError::Kind;
  for (const K k : {K::Syntax, K::Import, K::Load, K::Exception, K::NoRaise, K::Return, K::Timeout, K::Memory, K::Crash}) {
    if (name == errorKindName(k)) return k;
  }
  return std::nullopt;
}

std::optional<LearnerError> parseError(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  LearnerError e;
  e.kind = kindFromName(text(j, "kind")).value_or(LearnerError::Kind::Crash);
  e.type = text(j, "type");
  e.message = text(j, "message");
  e.file = text(j, "file");
  e.line = integer(j, "line");
  e.traceback = text(j, "traceback");
  return e;
}

// The first `limit` bytes of s, cut at a UTF-8 character boundary.
std::string cutUtf8(std::string s, std::size_t limit) {
  if (s.size() <= limit) return s;
  std::size_t n = limit;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

// Where the Python stack was when faulthandler wrote it (a crash, or the time limit's SIGUSR1; one
// dump per run, as either ends it): the innermost frame in the learner's file, of any thread.
std::pair<int, std::string> learnerFrameInDump(const TemporaryFolder& dir, const std::string& learnerFile) {
  auto bytes = readFile(dir.file("faults.txt"), 1 << 20);
  if (!bytes || bytes->empty()) return {0, {}};
  const std::string& t = *bytes;
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(learnerFile, ec).string();
  for (const std::string& path : {learnerFile, canonical}) {
    const std::string needle = "File \"" + path + "\", line ";
    const auto at = t.find(needle);
    if (at == std::string::npos) continue;
    const std::size_t lineStart = at + needle.size();
    const int line = std::atoi(t.c_str() + lineStart);
    std::string function;
    const auto in = t.find(" in ", lineStart);
    const auto eol = t.find('\n', lineStart);
    if (in != std::string::npos && in < eol) function = t.substr(in + 4, eol - in - 4);
    return {line, function};
  }
  return {0, {}};
}

// The case the harness was on (progress.json), "" while importing the file.
std::string caseInProgress(const TemporaryFolder& dir) {
  auto bytes = readFile(dir.file("progress.json"), 1 << 16);
  if (!bytes) return {};
  auto j = parseStrictJson(*bytes, "progress.json");
  if (!j || !j->is_object()) return {};
  return text(*j, "phase") == "case" ? text(*j, "case") : std::string();
}

std::string where(const std::string& caseId, int line, const std::string& function) {
  std::string s = caseId.empty() ? " while importing the file" : " in case '" + caseId + "'";
  if (line > 0) s += " at line " + std::to_string(line) + (function.empty() ? "" : " (in " + function + ")");
  return s;
}

// What stopped the run when the harness did not say it itself: the time limit, the cancel, a
// signal, an early exit.
std::optional<LearnerError> processError(const ChildOutcome& child, const TemporaryFolder& dir,
                                         const LearnerRequest& request, bool manifestComplete,
                                         const std::string& stderrText) {
  LearnerError e;
  e.file = request.file;
  const std::string name = fs::path(request.file).filename().string();
  const std::string caseId = caseInProgress(dir);
  auto [line, function] = learnerFrameInDump(dir, request.file);
  e.line = line;
  const std::string at = where(caseId, line, function);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", request.limits.wallSeconds);
  if (child.cancelled) {
    e.kind = LearnerError::Kind::Crash;
    e.message = name + ": the run was cancelled" + at;
    return e;
  }
  if (child.timedOut || child.signal == SIGXCPU) {
    e.kind = LearnerError::Kind::Timeout;
    e.message = name + ": the time limit (" + std::string(seconds) + " s) ran out" + at +
                " — an endless loop, or far more work than these small cases need";
    return e;
  }
  if (child.signal != 0) {
    const bool outOfMemory = stderrText.find("bad_alloc") != std::string::npos ||
                             stderrText.find("MemoryError") != std::string::npos;
    if (outOfMemory) {
      e.kind = LearnerError::Kind::Memory;
      e.message = name + ": the memory limit (" + std::to_string(request.limits.memoryBytes >> 20) +
                  " MiB) ran out" + at;
      return e;
    }
    e.kind = LearnerError::Kind::Crash;
    e.message = name + ": the Python process was killed by " + signalName(child.signal) + at;
    if (child.signal == SIGKILL) e.message += " (the system's out-of-memory killer, or another process)";
    if (child.signal == SIGXFSZ) e.message += " (a file written past " + std::to_string(kFileSizeLimit >> 20) + " MiB)";
    return e;
  }
  if (manifestComplete && child.exitCode == 0) return std::nullopt;
  e.kind = LearnerError::Kind::Crash;
  e.message = name + ": the Python process stopped with exit status " + std::to_string(child.exitCode) + at;
  const std::string tail = stderrText.size() > 2000 ? stderrText.substr(stderrText.size() - 2000) : stderrText;
  if (!tail.empty()) e.message += "\n" + tail;
  return e;
}

// The arrays one case wrote, bounded by the case's capture budget.
Result<Tensor> readArray(const TemporaryFolder& dir, const std::string& name, std::uint64_t budget) {
  if (!plainFileName(name)) return makeError("not a plain file name: '" + name + "'");
  return loadNpy(dir.file(name), NpyValues::Any, budget);
}

CaseRun parseCase(const Json& c, const TemporaryFolder& dir, const RunLimits& limits) {
  CaseRun run;
  run.caseId = text(c, "id");
  run.seconds = number(c, "seconds");
  run.capturesTruncated = boolean(c, "truncated");
  run.error = parseErrorAt(c, "error");
  const std::uint64_t budget = std::max<std::uint64_t>(limits.captureBytes, 1) + (64ull << 20);
  if (const std::string out = text(c, "output"); !out.empty()) {
    auto t = readArray(dir, out, budget);
    if (t) {
      run.output = std::move(*t);
    } else if (!run.error) {
      LearnerError e;
      e.kind = LearnerError::Kind::Crash;
      e.message = "the output could not be read back: " + t.error().message;
      run.error = std::move(e);
    }
  }
  for (const Json* l : elements(c, "loads")) {
    if (!l->is_object()) continue;
    run.loads.push_back({text(*l, "parameter"), text(*l, "weight"), boolean(*l, "transposed")});
  }
  std::uint64_t bytes = 0;
  for (const Json* entry : elements(c, "captures")) {
    const Json& k = *entry;
    if (!k.is_object()) continue;
    if (static_cast<int>(run.captures.size()) >= limits.maxCaptures || bytes > limits.captureBytes) {
      run.capturesTruncated = true;
      break;
    }
    auto t = readArray(dir, text(k, "file"), budget);
    if (!t) continue;  // a capture the learner's code overwrote or removed is not theirs to show
    Capture cap;
    cap.source = text(k, "source") == "call" ? Capture::Source::Call : Capture::Source::Local;
    cap.name = text(k, "name");
    cap.function = text(k, "function");
    cap.line = integer(k, "line");
    cap.order = static_cast<int>(run.captures.size());
    cap.contiguous = !k.contains("contiguous") || boolean(k, "contiguous");
    bytes += t->data.size() * sizeof(float);
    cap.value = std::move(*t);
    run.captures.push_back(std::move(cap));
  }
  return run;
}

// The learner's printed text: what the harness kept, then whatever reached the process's own
// stdout and stderr (C-level writes, a crash's message), all within outputBytes.
void collectPrinted(LearnerRun& run, const Json* manifest, const TemporaryFolder& dir, const RunLimits& limits,
                    std::string& stderrText) {
  const std::size_t limit = static_cast<std::size_t>(limits.outputBytes);
  if (manifest) {
    run.printed = text(*manifest, "printed");
    run.printedTruncated = integer(*manifest, "printedDropped") > 0;
  }
  for (const char* name : {"stdout.txt", "stderr.txt"}) {
    auto size = regularFileSize(dir.file(name));
    if (!size || *size == 0) continue;
    auto bytes = readFilePrefix(dir.file(name), std::min<std::uint64_t>(*size, limit + 4096));
    if (!bytes) continue;
    if (std::string_view(name) == "stderr.txt") stderrText = *bytes;
    if (*size > bytes->size()) run.printedTruncated = true;
    run.printed += *bytes;
  }
  if (run.printed.size() > limit) {
    run.printed = cutUtf8(std::move(run.printed), limit);
    run.printedTruncated = true;
  }
}

}  // namespace

const char* errorKindName(LearnerError::Kind kind) {
  switch (kind) {
    case LearnerError::Kind::Syntax: return "syntax";
    case LearnerError::Kind::Import: return "import";
    case LearnerError::Kind::Load: return "load";
    case LearnerError::Kind::Exception: return "exception";
    case LearnerError::Kind::NoRaise: return "no_raise";
    case LearnerError::Kind::Return: return "return";
    case LearnerError::Kind::Timeout: return "timeout";
    case LearnerError::Kind::Memory: return "memory";
    case LearnerError::Kind::Crash: return "crash";
  }
  return "crash";
}

Result<LearnerRun> runLearner(const LearnerRequest& request, const std::atomic<bool>* cancel) {
  if (request.exercise == nullptr) return makeError("practice run: no exercise given");
  if (::access(request.python.c_str(), X_OK) != 0) {
    return makeError("cannot run the learner's code: " + request.python +
                     " is not an executable Python (Debian's python3 with torch and numpy is needed)");
  }
  const std::string harness =
      request.harness.empty() ? (fs::path(assetsDir()) / "practice" / "harness.py").string() : request.harness;
  if (auto size = regularFileSize(harness); !size) return makeError("the practice harness is missing: " + size.error().message);
  if (auto size = regularFileSize(request.file); !size) return makeError("cannot read the file to check: " + size.error().message);

  auto dir = TemporaryFolder::create();
  if (!dir) return dir.error();
  try {
    if (auto written = writeRequest(request, *dir); !written) return written.error();
    const ChildPlan plan = makePlan(request, harness, *dir);
    auto child = runChild(plan, *dir, request.limits.wallSeconds, cancel);
    if (!child) return child.error();

    LearnerRun run;
    run.seconds = child->seconds;
    std::optional<Json> manifest;
    if (auto size = regularFileSize(dir->file("manifest.json")); size) {
      auto bytes = readFile(dir->file("manifest.json"), kManifestBytes);
      if (bytes) {
        auto parsed = parseStrictJson(*bytes, "the harness's manifest.json");
        if (parsed && parsed->is_object()) manifest = std::move(*parsed);
      }
    }
    std::string stderrText;
    collectPrinted(run, manifest ? &*manifest : nullptr, *dir, request.limits, stderrText);
    const bool complete = manifest && boolean(*manifest, "complete");
    if (manifest) {
      for (const Json* c : elements(*manifest, "cases")) {
        if (c->is_object()) run.cases.push_back(parseCase(*c, *dir, request.limits));
      }
      run.error = parseErrorAt(*manifest, "error");
    }
    if (auto stopped = processError(*child, *dir, request, complete, stderrText)) {
      // The process's fate says more than a manifest written before it (a crash mid-case).
      if (!run.error || child->timedOut || child->cancelled || child->signal != 0) run.error = std::move(stopped);
    }
    return run;
  } catch (const std::exception& e) {  // bad_alloc, a filesystem error: ours, with the folder named
    return makeError("practice run in " + dir->path() + ": " + e.what());
  }
}

}  // namespace mhascope::practice
