// Dear ImGui's user config for every translation unit of ours (IMGUI_USER_CONFIG, set in
// app/CMakeLists.txt): ImGui's asserts stay ON in Release builds too.
//
// Why: ImGui reports API misuse (a PushStyleColor without its Pop, an End without a Begin, an
// ID stack left unbalanced) only through IM_ASSERT. Debian's libimgui.a is built without NDEBUG,
// so the checks inside imgui.cpp already abort there; but IM_ASSERT expands to assert(), and our
// Release build defines NDEBUG, which silently removed the same checks from the inline code in
// imgui.h / imgui_internal.h compiled into our files and into the backends. A misuse must stop
// the GUI tests (and the exploration test) with the expression and place, whatever the build.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace mhascope::app {

[[noreturn]] inline void imguiAssertFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "mhascope: Dear ImGui assertion failed: %s (%s:%d)\n", expr, file, line);
  std::fflush(stdout);
  std::fflush(stderr);
  std::abort();
}

}  // namespace mhascope::app

#define IM_ASSERT(_EXPR) ((_EXPR) ? (void)0 : ::mhascope::app::imguiAssertFailed(#_EXPR, __FILE__, __LINE__))
