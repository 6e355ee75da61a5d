// Panels only draw. Drawing code — every source under app/panels/, app/lessons/ and app/widgets/,
// and every source of app/train_lab/, app/circuits/ and app/practice/ that includes <imgui.h> — never calls the
// engine (forward, buildModel), a lesson's computation (its compute() or the function behind it) or
// an analysis (circuits, rollout, ablation, the model view); never starts a thread or a job; and
// never touches the file system. Panels read AppState (the trace, its model, the lesson results and every job's
// slot, filled by the app's update step) and edit the view state. Like tests/core/purity_test.cpp,
// a scan of the sources.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The source without // and /* */ comments and without string and character literals, so only
// code is matched: a comment becomes one space, a literal "" (a plain scan: under the sanitizers
// this test code is unoptimised, where std::regex_replace took seconds over the sources).
std::string codeOnly(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
      out += ' ';
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
      out += ' ';
    } else if (c == '"' || c == '\'') {
      // To the closing quote, skipping escapes; an unclosed one ends at the line's end.
      std::size_t j = i + 1;
      while (j < n && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      if (j < n && text[j] == c) {
        out += "\"\"";
        i = j + 1;
      } else {
        out += c;
        ++i;
      }
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every drawing source: the drawing folders whole, and app/train_lab's files that draw.
std::vector<fs::path> drawingSources() {
  std::vector<fs::path> out;
  const fs::path root(MHASCOPE_SOURCE_DIR);
  for (const char* folder : {"app/panels", "app/lessons", "app/widgets", "app/train_lab", "app/circuits", "app/practice"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      const bool mixed = std::string(folder) == "app/train_lab" || std::string(folder) == "app/circuits" ||
                         std::string(folder) == "app/practice";
      if (mixed && readFile(e.path()).find("#include <imgui.h>") == std::string::npos) continue;
      out.push_back(e.path());
    }
  }
  return out;
}

// Every drawing source with its code (codeOnly), read once for all the scans below.
const std::vector<std::pair<fs::path, std::string>>& drawingCode() {
  static const std::vector<std::pair<fs::path, std::string>> code = [] {
    std::vector<std::pair<fs::path, std::string>> out;
    for (const fs::path& f : drawingSources()) out.emplace_back(f, codeOnly(readFile(f)));
    return out;
  }();
  return code;
}

// The lines of `code` that hold one of `anchors`, each with the line after it (a call's '(' may
// follow on the next line): what the scans below search. Every pattern holds one of its anchors,
// so nothing it would find elsewhere is left out; std::regex then reads a few lines per file
// instead of every one (unoptimised under the sanitizers, it took seconds over the sources).
std::string linesWith(const std::string& code, const std::vector<std::string>& anchors) {
  std::string out;
  std::size_t at = 0;
  while (at < code.size()) {
    const std::size_t end = std::min(code.find('\n', at), code.size());
    const std::string_view line(code.data() + at, end - at);
    bool hit = false;
    for (const std::string& a : anchors) {
      if (line.find(a) != std::string_view::npos) {
        hit = true;
        break;
      }
    }
    if (hit) {
      const std::size_t next = end < code.size() ? std::min(code.find('\n', end + 1), code.size()) : end;
      out.append(code, at, next - at);
      out += '\n';
    }
    at = end + 1;
  }
  return out;
}

// A call to the engine, a lesson's or an analysis' computation, or what reads a checkpoint.
const std::vector<std::string>& computationNames() {
  static const std::vector<std::string> names = {
      "forward", "forwardInto", "buildModel", "perHeadLoopVsVectorized", "parameterTable", "mixThenSplit",
      "maskComparison", "runPitfall", "checkWeights", "costSweep", "costAt", "costSizesOf", "cellBreakdown", "makeQuiz",
      "gqaLesson", "positionsLesson", "windowLesson", "kvCacheLesson", "startDecode", "decodeNext", "decode",
      "computeTrace", "computeCircuits", "computeModelCircuits", "computeOneHeadCircuits", "computeModelView",
      "compositionBaseline", "attentionRollout", "rolloutOf", "rolloutStep", "checkpointRollout", "sequenceSnapshot",
      "meanHeadWeights", "pathRollout", "evaluateAblated", "evaluateOnProbe", "ablationLesson", "loadCheckpoint",
      "readCheckpointCircuits", "updateTrainLab", "updateCircuits", "buildCurves", "modelViewOf", "compareOf",
      "splitWords", "splitBatch", "resizeTokens", "patchSweep", "attributeLogits", "runExperimentJob", "experimentsOf",
      "tokenizeForModel"};
  return names;
}
const std::regex& computationCall() {
  static const std::regex call = [] {
    std::string alternatives;
    for (const std::string& n : computationNames()) alternatives += (alternatives.empty() ? "" : "|") + n;
    return std::regex(R"((^|[^\w:.>])()" + alternatives + R"()\s*\()");
  }();
  return call;
}

// Starting a thread or a job: std::async / std::thread, a job runner made or fed.
const std::regex& threadStart() {
  static const std::regex start(
      R"((std::(async|thread|jthread)\b)|\bpthread_create\s*\(|)"
      R"(make_(unique|shared)\s*<\s*(LatestJob|KeyedJob|ModelCircuitsCompute|ModelViewCompute|ExperimentsCompute)\b|(\.|->)(submit|request)\s*\()");
  return start;
}

// A call that reads the file system (a folder's listing, a file's existence, size or time, a
// stream on a file). Pure path arithmetic (fs::path, filename(), parent_path()) is not one.
const std::regex& fileSystemCall() {
  static const std::regex call(
      R"(((fs|std::filesystem)::(exists|is_directory|is_regular_file|status|symlink_status|file_size|last_write_time|)"
      R"(directory_iterator|recursive_directory_iterator|current_path|create_directories|remove|remove_all|rename|copy_file)\b)|)"
      R"(\b[io]?fstream\b|\bfopen\s*\(|\bcheckpointCircuitsKey\s*\()");
  return call;
}

// Writing a file or acting on the Train mode's run: an exporter, a save, or one of the Train mode's
// actions (train_lab/lab_state.hpp).
const std::regex& writeOrAction() {
  static const std::regex call(
      R"((^|[^\w:.>])(export(Heatmap|HeadGrid|Comparison|ContactSheet|Curves)|saveWorkspace|saveWorkspaceAndSay|)"
      R"(saveCheckpoint|writeFileAtomic|writeNewFile|refuseToReplace|)"
      R"(train(Play|Step|Reset|SaveCheckpoint|LoadCheckpoint|ExportSheet|ExportCurves|OpenInPipeline|DropPath))\s*\()");
  return call;
}

// The code without what it files for the update step: every `requests.file(...)` call, its
// request's body included, is cut out (parentheses matched).
std::string withoutFiledRequests(std::string code) {
  const std::string opener = "requests.file(";
  for (std::size_t at = code.find(opener); at != std::string::npos; at = code.find(opener, at)) {
    std::size_t i = at + opener.size();
    for (int depth = 1; i < code.size() && depth > 0; ++i) depth += code[i] == '(' ? 1 : code[i] == ')' ? -1 : 0;
    code.replace(at, i - at, " ");
  }
  return code;
}

TEST(PanelPurity, DrawingCodeNeverComputes) {
  // A lesson's compute(), however it is named (lessons::Masks::compute, L::compute).
  const std::regex lessonCompute(R"((^|[^\w.>])compute\s*\()");
  const auto& files = drawingCode();
  for (const auto& [f, code] : files) {
    std::smatch m;
    const std::string calls = linesWith(code, computationNames());
    EXPECT_FALSE(std::regex_search(calls, m, computationCall()))
        << f << " calls " << m.str(2) << "(): panels only draw; compute it in the app's update step (the compute "
        << "scheduler, a job of shell/jobs.hpp) and read the result from the state";
    const std::string computes = linesWith(code, {"compute"});
    EXPECT_FALSE(std::regex_search(computes, m, lessonCompute))
        << f << " calls a lesson's compute(): the compute scheduler runs it; a tab draws its slot";
  }
  EXPECT_GT(files.size(), 25u);
  std::size_t trainLab = 0, circuits = 0, practice = 0;
  for (const auto& [f, code] : files) {
    trainLab += f.parent_path().filename() == "train_lab" ? 1 : 0;
    circuits += f.parent_path().filename() == "circuits" ? 1 : 0;
    practice += f.parent_path().filename() == "practice" ? 1 : 0;
  }
  EXPECT_GE(practice, 1u) << "the Practice mode's drawing is scanned too";
  EXPECT_GE(trainLab, 2u) << "the Train mode's panels are scanned too";
  EXPECT_GE(circuits, 2u) << "the Circuits panel's drawing is scanned too";
}

TEST(PanelPurity, DrawingCodeStartsNoThreadOrJob) {
  for (const auto& [f, code] : drawingCode()) {
    std::smatch m;
    const std::string starts = linesWith(code, {"std::", "pthread_create", "make_", "submit", "request"});
    EXPECT_FALSE(std::regex_search(starts, m, threadStart()))
        << f << " starts work off the UI thread (" << m.str(0) << "): jobs start in the app's update step "
        << "(App::updateCompute), through shell/jobs.hpp";
  }
}

// A click that writes a file or acts on a run files a request (state/requests.hpp) that the
// update step performs; drawing code never makes the call itself.
TEST(PanelPurity, DrawingCodeWritesNothingAndFilesItsActions) {
  for (const auto& [f, text] : drawingCode()) {
    const std::string code = withoutFiledRequests(text);
    std::smatch m;
    const std::string writes = linesWith(code, {"export", "save", "write", "refuseToReplace", "train"});
    EXPECT_FALSE(std::regex_search(writes, m, writeOrAction()))
        << f << " calls " << m.str(2) << "() while drawing: file it (ctx.requests.file, fileExport) for the "
        << "update step to perform";
  }
}

TEST(PanelPurity, DrawingCodeNeverTouchesTheFileSystem) {
  for (const auto& [f, code] : drawingCode()) {
    std::smatch m;
    const std::string touches = linesWith(code, {"fs::", "filesystem::", "fstream", "fopen", "checkpointCircuitsKey"});
    EXPECT_FALSE(std::regex_search(touches, m, fileSystemCall()))
        << f << " touches the file system (" << m.str(0) << ") while drawing: look in the update step and keep the "
        << "answer in the state";
  }
}

// The scans themselves find a call, and ignore the same words in comments and strings.
TEST(PanelPurity, TheScanSeesCallsNotWords) {
  const std::regex& call = computationCall();
  const std::regex lessonCompute(R"((^|[^\w.>])compute\s*\()");
  EXPECT_TRUE(std::regex_search(codeOnly("auto c = cellBreakdown(t, 0, 0, 0, 0);"), call));
  EXPECT_TRUE(std::regex_search(codeOnly("if (!forward(a, b, c, t)) return;"), call));
  EXPECT_TRUE(std::regex_search(codeOnly("view.rolled = attentionRollout(s);"), call));
  EXPECT_TRUE(std::regex_search(codeOnly("auto r = lessons::Masks::compute(model, c);"), lessonCompute));
  EXPECT_FALSE(std::regex_search(codeOnly("int n = recompute(x); // compute(y)"), lessonCompute));
  EXPECT_FALSE(std::regex_search(codeOnly("// runs forward( here\nint x = 1;"), call));
  EXPECT_FALSE(std::regex_search(codeOnly("Text(\"the forward (pass)\");"), call));
  EXPECT_FALSE(std::regex_search(codeOnly("std::forward<F>(f);"), call));

  const std::regex& start = threadStart();
  EXPECT_TRUE(std::regex_search(codeOnly("job = std::async(std::launch::async, f, p);"), start));
  EXPECT_TRUE(std::regex_search(codeOnly("std::thread t([] {});"), start));
  EXPECT_TRUE(std::regex_search(codeOnly("v.compute = std::make_unique<ModelCircuitsCompute>();"), start));
  EXPECT_TRUE(std::regex_search(codeOnly("worker->submit([p] { return run(p); });"), start));
  EXPECT_FALSE(std::regex_search(codeOnly("if (s.busy()) Text(\"std::async\"); // std::thread"), start));

  const std::regex& files = fileSystemCall();
  EXPECT_TRUE(std::regex_search(codeOnly("if (fs::is_directory(ui.folder, ec)) return;"), files));
  EXPECT_TRUE(std::regex_search(codeOnly("const auto n = std::filesystem::file_size(path, ec);"), files));
  EXPECT_TRUE(std::regex_search(codeOnly("std::ifstream in(path);"), files));
  EXPECT_TRUE(std::regex_search(codeOnly("const std::string k = checkpointCircuitsKey(path, text);"), files));
  EXPECT_FALSE(std::regex_search(codeOnly("const auto name = std::filesystem::path(p).filename().string();"), files));
  EXPECT_FALSE(std::regex_search(codeOnly("Text(\"the file exists\"); // fs::exists(p)"), files));

  const std::regex& write = writeOrAction();
  EXPECT_TRUE(std::regex_search(codeOnly("if (Button(\"Save\")) st = exportHeatmap(path, s, o);"), write));
  EXPECT_TRUE(std::regex_search(codeOnly("if (Button(\"Train\")) trainPlay(lab);"), write));
  EXPECT_FALSE(std::regex_search(withoutFiledRequests(codeOnly(
                   "if (Button(\"Train\")) ctx.requests.file([&lab] { trainPlay(lab); });\nint x = f(1);")),
               write));
  EXPECT_TRUE(std::regex_search(withoutFiledRequests(codeOnly(
                  "ctx.requests.file([&s] { g(s, (1 + 2)); });\ntrainReset(lab);")),
              write));
  EXPECT_FALSE(std::regex_search(codeOnly("fileExport(ctx.requests, ui, path, picture());"), write));
}

}  // namespace

namespace {

// The command line stands on core alone: no source of app/cli/ (nor the window's command line,
// shell/launch_options.cpp) includes ImGui, GLFW or GL, or a header of the window's own folders.
TEST(PanelPurity, TheCommandLineIncludesNothingOfTheWindow) {
  const std::regex window(R"(#\s*include\s*[<"](imgui|GLFW/|GL/|state/|panels/|widgets/|render/|platform/|lessons/lesson_tab|train_lab/|testing/))");
  const fs::path root(MHASCOPE_SOURCE_DIR);
  std::vector<fs::path> files = {root / "app/shell/launch_options.cpp", root / "app/shell/launch_options.hpp"};
  for (const auto& e : fs::directory_iterator(root / "app/cli")) files.push_back(e.path());
  EXPECT_GT(files.size(), 20u);
  for (const fs::path& f : files) {
    std::smatch m;
    const std::string text = readFile(f);
    EXPECT_FALSE(std::regex_search(text, m, window)) << f << " includes " << m.str(0) << ": the command line is core's";
  }
}

}  // namespace

namespace {

// The state the panels read depends on nothing of the loop that drives it: no source under
// app/state/ includes a header from app/shell/ (the types both need, such as the compute
// status, live in app/state/).
TEST(PanelPurity, StateNeverIncludesTheShell) {
  const std::regex include(R"(#\s*include\s*[<"]shell/)");
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(MHASCOPE_SOURCE_DIR) / "app/state")) {
    const auto ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(std::regex_search(ss.str(), include)) << e.path() << " includes a header from app/shell/";
    ++files;
  }
  EXPECT_GT(files, 5);
}

}  // namespace
