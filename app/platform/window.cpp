// GLFW window + GL context. Every glfw* call of the app lives in this file.
#include "platform/window.hpp"

#include <GLFW/glfw3.h>
#include <imgui_impl_glfw.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace mhascope::app {
namespace {

// GLFW reports errors through a callback; the last one is kept to explain a failed create().
// A thread_local, not a function-local static: it is written by GLFW on this thread only.
thread_local std::string tLastGlfwError;

void onGlfwError(int code, const char* description) {
  tLastGlfwError = std::string(description ? description : "unknown error") + " (GLFW error " +
                   std::to_string(code) + ")";
}

}  // namespace

Result<std::unique_ptr<Window>> Window::create(const WindowOptions& options) {
  glfwSetErrorCallback(onGlfwError);
  tLastGlfwError.clear();
  if (!glfwInit()) {
    return makeError("cannot open a window: " + (tLastGlfwError.empty() ? "glfwInit failed" : tLastGlfwError));
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, options.visible ? GLFW_TRUE : GLFW_FALSE);
  // Let the window grow with the monitor's content scale, so a 1600-unit-wide window is not
  // tiny on a high-DPI screen (X11: window coordinates are pixels).
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  GLFWwindow* w = glfwCreateWindow(options.width, options.height, options.title, nullptr, nullptr);
  if (!w) {
    std::string why = tLastGlfwError.empty() ? "no OpenGL 3.3 core context" : tLastGlfwError;
    glfwTerminate();
    return makeError("cannot create an OpenGL 3.3 window: " + why);
  }
  glfwMakeContextCurrent(w);
  glfwSwapInterval(options.vsync ? 1 : 0);
  std::unique_ptr<Window> window(new Window(w));
  // Installed before ImGui's backend, which chains to it (ImGui_ImplGlfw_InstallCallbacks).
  glfwSetWindowUserPointer(w, window.get());
  glfwSetKeyCallback(w, &Window::onKey);
  glfwSetDropCallback(w, &Window::onDrop);  // ImGui 1.86's backend installs none: nothing to chain
  return window;
}

void Window::onKey(GLFWwindow* w, int key, int /*scancode*/, int action, int /*mods*/) {
  auto* self = static_cast<Window*>(glfwGetWindowUserPointer(w));
  if (self && action == GLFW_PRESS && key >= 0) self->pressedKeys_.push_back(key);
}

void Window::onDrop(GLFWwindow* w, int count, const char** paths) {
  auto* self = static_cast<Window*>(glfwGetWindowUserPointer(w));
  for (int i = 0; self && i < count; ++i) self->droppedPaths_.emplace_back(paths[i]);
}

std::vector<std::string> Window::takeDroppedPaths() {
  std::vector<std::string> out;
  out.swap(droppedPaths_);
  return out;
}

std::vector<int> Window::takePressedKeys() {
  std::vector<int> keys;
  keys.swap(pressedKeys_);
  return keys;
}

bool Window::keyIsDown(int key) const { return glfwGetKey(window_, key) == GLFW_PRESS; }

Window::~Window() {
  shutdownImGuiPlatform();
  if (window_) glfwDestroyWindow(window_);
  glfwTerminate();
}

bool Window::shouldClose() const { return glfwWindowShouldClose(window_) != 0; }
void Window::requestClose() { glfwSetWindowShouldClose(window_, GLFW_TRUE); }

FramebufferSize Window::framebufferSize() const {
  FramebufferSize s;
  glfwGetFramebufferSize(window_, &s.width, &s.height);
  // Iconified windows can report their last size; treat them as empty too.
  if (glfwGetWindowAttrib(window_, GLFW_ICONIFIED)) s = {};
  return s;
}

float Window::contentScale() const {
  float x = 1.0f, y = 1.0f;
  glfwGetWindowContentScale(window_, &x, &y);
  const float s = x > y ? x : y;
  return (s > 0.5f && s < 8.0f) ? s : 1.0f;  // guard against nonsense from odd setups
}

bool Window::initImGuiPlatform() {
  imguiPlatform_ = ImGui_ImplGlfw_InitForOpenGL(window_, true);
  return imguiPlatform_;
}
void Window::imguiPlatformNewFrame() { ImGui_ImplGlfw_NewFrame(); }
void Window::shutdownImGuiPlatform() {
  if (imguiPlatform_) ImGui_ImplGlfw_Shutdown();
  imguiPlatform_ = false;
}

void Window::resize(int width, int height) { glfwSetWindowSize(window_, width, height); }
void Window::swapBuffers() { glfwSwapBuffers(window_); }
void Window::waitEvents(double timeoutSeconds) { glfwWaitEventsTimeout(timeoutSeconds); }
void Window::pollEvents() { glfwPollEvents(); }
void Window::postEmptyEvent() { glfwPostEmptyEvent(); }
double Window::now() { return glfwGetTime(); }

}  // namespace mhascope::app
