// The headless command line: the subcommands' one table (commands.cpp) parsed with CLI11, the one
// run of the parsed subcommand (each in its own <name>_command.cpp), and what they share: the
// error line, the --json output check and the traced forward with its warnings (command_common.hpp).
#include "cli.hpp"
#include "interrupt_guard.hpp"
#include "util/format.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <utility>
#include <vector>

#include "attention/tokenizer.hpp"  // utf8Length
#include "command_common.hpp"
#include "commands.hpp"
#include "io/file_io.hpp"
#include "options.hpp"
#include "util/utf8.hpp"
#include "workspace_options.hpp"

namespace mhascope::cli {

std::string cell(const std::string& token, std::size_t width) {
  std::string out;
  std::size_t cols = 0;
  for (std::size_t i = 0; i < token.size();) {
    const std::size_t len = decodeUtf8Step(token, i).len;
    if (cols + 1 == width && utf8Length(std::string_view(token).substr(i)) > 1) {
      out += "…";
      ++cols;
      break;
    }
    out.append(token, i, len);
    ++cols;
    i += len;
  }
  out.append(width > cols ? width - cols : 0, ' ');
  return out;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "mhascope: error: %s\n", printableMessage(message).c_str());
  return 1;
}

Status checkJsonOutput(const std::string& json, bool force, const std::vector<std::pair<std::string, std::string>>& inputs) {
  namespace fs = std::filesystem;
  for (const auto& [flag, input] : inputs) {
    if (sameFile(json, input)) {
      return makeError("--json '" + json + "' is the same file as " + flag + " '" + input +
                       "'; writing it would destroy that input: choose another name");
    }
  }
  std::error_code ec;
  if (fs::is_symlink(json, ec)) {
    return makeError("--json '" + json + "' is a symbolic link; writing would replace the link by a file, so name "
                     "the file itself");
  }
  if (fs::exists(json, ec) && !fs::is_directory(json, ec) && !force) {
    return makeError("--json '" + json + "' already exists; add --force to replace it, or name a new file");
  }
  return checkWritablePath(json);
}

void warn(const std::string& message) { std::fprintf(stderr, "mhascope: warning: %s\n", printableMessage(message).c_str()); }

Status writeOutputFile(const std::string& path, const std::string& bytes, const char* lead) {
  InterruptGuard guard({SIGINT, SIGTERM, SIGHUP});
  const Status written = writeFileAtomic(path, bytes);
  if (written) std::printf("%swrote %s\n", lead, path.c_str());
  if (const int sig = InterruptGuard::received()) {
    std::fflush(stdout);
    std::fprintf(stderr, written ? "mhascope: interrupted after %s was written whole\n"
                                 : "mhascope: interrupted; %s was not written\n",
                 path.c_str());
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  return written;
}

Status refuseInsideModelFolder(const std::string& flag, const std::string& path, const std::string& modelDir) {
  namespace fs = std::filesystem;
  if (path.empty() || modelDir.empty()) return Ok{};
  std::error_code ec;
  const std::string dir = fs::is_regular_file(modelDir, ec) ? fs::path(modelDir).parent_path().string() : modelDir;
  if (!isInsideFolder(path, dir.empty() ? "." : dir)) return Ok{};  // --model may name the config.json
  return makeError(flag + " '" + path + "' is inside the model folder '" + modelDir +
                   "'; mhascope writes nothing there: choose a place outside it");
}

namespace {


// Overflow and fully masked rows are reported, never silent: finite inputs can still overflow
// float32 (inputs ×1e20 make every score inf and every weight NaN).
void warnAboutNumbers(const Trace& t) {
  for (const NonFiniteStage& n : nonFiniteStages(t)) {
    const std::int64_t cells = Tensor::numelOf(t.shapeOf(n.stage));
    warn("stage '" + std::string(stageInfo(n.stage).name) + "' has " + std::to_string(n.nan + n.inf) + " of " +
         std::to_string(cells) + " cells not finite (" + std::to_string(n.nan) + " NaN, " + std::to_string(n.inf) +
         " inf; the first at flat index " + std::to_string(n.first) +
         "): float32 overflowed; scale the inputs or weights down");
  }
  std::vector<std::string> rows;
  for (int b = 0; b < t.batch; ++b)
    for (int q = 0; q < t.tq; ++q)
      if (t.isFullyMasked(b, q)) rows.push_back("(b " + std::to_string(b) + ", t " + std::to_string(q) + ")");
  if (!rows.empty()) {
    std::string list;
    for (std::size_t i = 0; i < rows.size() && i < 8; ++i) list += (i ? ", " : "") + rows[i];
    if (rows.size() > 8) list += ", ...";
    warn(std::to_string(rows.size()) + " query row(s) have every key blocked: " + list +
         "; their weights and head outputs are 0, so their final output rows are just b_o (" +
         fullyMaskedRowElsewhereText() + ")");
  }
}

}  // namespace

Result<Trace> computeTrace(const ResolvedModel& r) {
  if (r.modelLayer && !r.modelLayer->textNote.empty()) warn(r.modelLayer->textNote);
  Trace t;
  if (r.recorded) {  // a latent layer: the model's own forward recorded it (the engine has no W_q, W_k, W_v to run)
    t = *r.recorded;
  } else if (auto s = forward(r.model.inputs, r.model.weights, r.model.options, t); !s) {
    return s.error();
  }
  warnAboutNumbers(t);
  return t;
}


bool isCommand(std::string_view arg) {
  for (const Command& c : commands())
    if (arg == c.name) return true;
  return false;
}

int run(int argc, char** argv) {
  // A signal or `ulimit -f` must not kill a save half-way with its temporary file left behind.
  removeTemporaryFilesOnSignals();
  CLI::App app{"mhascope: see inside multi-head attention (headless commands)", "mhascope"};
  app.require_subcommand(1);
  CommandContext ctx;
  std::vector<std::pair<CLI::App*, CommandRun>> subcommands;
  for (const Command& c : commands()) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    if (c.readsModel) addModelOptions(*sub, ctx.model);
    subcommands.emplace_back(sub, c.add(*sub, ctx));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return exitForParseError(app, e, std::string("mhascope ") + (argc > 1 ? argv[1] : ""));
  }
  int rc = 2;
  try {
    for (std::size_t i = 0; i < subcommands.size(); ++i) {
      auto& [sub, runIt] = subcommands[i];
      if (!sub->parsed()) continue;
      if (commands()[i].readsModel) {
        auto ws = applyWorkspaceOptions(ctx.model);
        if (!ws) return fail(ws.error().message);
        ctx.workspace = std::move(*ws);
      }
      rc = runIt(ctx);
    }
  } catch (const std::bad_alloc&) {
    rc = fail("out of memory: the system refused an allocation although the estimate fit the budget; lower "
              "--memory-budget or use smaller sizes");
  } catch (const std::exception& e) {  // filesystem_error, JSON errors: a message, not a crash
    rc = fail(e.what());
  }
  // What was printed must have arrived: `mhascope info > /dev/full` is an error, not exit 0.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    std::fprintf(stderr, "mhascope: error: cannot write to standard output: %s\n",
                 err ? std::strerror(err) : "write error");
    return 1;
  }
  return rc;
}

}  // namespace mhascope::cli
