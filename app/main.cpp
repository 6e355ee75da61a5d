// mhascope: a headless command — info, run, export, bench, train, circuits, decode, compare,
// predict (their one table: cli/commands.cpp) — or the window.
//   mhascope                       open the window
//   mhascope --screenshot s.png    render the window once and save it (tests, the docs' pictures)
//   mhascope --bench-frames 300    frame times of the all-heads grid at T=512, h=16
//   mhascope export --help         pictures without any display
#include <cstdio>
#include <exception>
#include <new>

#include "shell/app.hpp"
#include "shell/launch_options.hpp"

#include "cli/cli.hpp"
#include "io/file_io.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && mhascope::cli::isCommand(argv[1])) return mhascope::cli::run(argc, argv);
  const mhascope::app::ParsedLaunch launch = mhascope::app::parseLaunchOptions(argc, argv);
  if (launch.exitCode) return *launch.exitCode;
  mhascope::removeTemporaryFilesOnSignals();  // Ctrl-C or SIGTERM during a save leaves no hidden temporary file
  try {
    mhascope::app::App app(launch.options);
    return app.run();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "mhascope: out of memory: the system refused an allocation; use a smaller configuration "
                         "or a lower memory budget\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mhascope: %s\n", e.what());
  }
  return 1;
}
