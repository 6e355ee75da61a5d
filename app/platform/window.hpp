// The only place that calls glfw*: creating the window and its OpenGL 3.3 core context, the
// monitor's content scale, waiting for events when idle, and where imgui.ini lives.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "util/user_dirs.hpp"  // configDir, stateDir

struct GLFWwindow;

namespace mhascope::app {

struct WindowOptions {
  int width = 1600, height = 1000;  // screen coordinates
  bool visible = true;              // hidden windows still render (screenshots under Xvfb)
  bool vsync = true;                // off for --bench-frames, so frame time is the work itself
  const char* title = "mhascope — multi-head attention, step by step";
};

struct FramebufferSize {
  int width = 0, height = 0;
  bool empty() const { return width <= 0 || height <= 0; }  // minimised or resized to nothing
};

// One GLFW window with a current GL 3.3 core context. Move-only; destroys the window and
// terminates GLFW in its destructor.
class Window {
 public:
  // Fails (instead of crashing) when there is no display or no GL 3.3: the message is one line.
  static Result<std::unique_ptr<Window>> create(const WindowOptions& options);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  bool shouldClose() const;
  void requestClose();
  FramebufferSize framebufferSize() const;
  // The monitor's DPI scale (1 on a plain 96-dpi screen, 2 on a typical high-DPI laptop).
  float contentScale() const;
  void resize(int width, int height);
  // Dear ImGui's GLFW platform backend for this window (input, cursor, clipboard).
  bool initImGuiPlatform();
  void imguiPlatformNewFrame();
  void shutdownImGuiPlatform();
  void swapBuffers();
  // Idle apps sleep until input arrives (or the timeout passes, so Play and the worker are
  // noticed); animating apps only poll.
  void waitEvents(double timeoutSeconds);
  void pollEvents();
  // Wakes a waitEvents() at once; callable from any thread (a worker's result is ready).
  static void postEmptyEvent();
  static double now();  // seconds, monotonic
  // Keys pressed during the last poll/wait, in order (GLFW key codes = ImGui 1.86 key indices).
  // Dear ImGui 1.86 only sees io.KeysDown at NewFrame, so a press and its release that arrive in
  // the same poll (a quick tap on a busy machine, or xdotool) would never be seen: App holds
  // such a key down for one frame.
  std::vector<int> takePressedKeys();
  bool keyIsDown(int key) const;
  // Files dropped on the window since the last call (UTF-8 paths).
  std::vector<std::string> takeDroppedPaths();

 private:
  explicit Window(GLFWwindow* w) : window_(w) {}
  static void onKey(GLFWwindow* w, int key, int scancode, int action, int mods);
  static void onDrop(GLFWwindow* w, int count, const char** paths);
  std::vector<std::string> droppedPaths_;
  GLFWwindow* window_ = nullptr;
  bool imguiPlatform_ = false;
  std::vector<int> pressedKeys_;
};

// configDir() and stateDir(), the folders kept between launches: util/user_dirs.hpp.

}  // namespace mhascope::app
