#include "render/gl_frame.hpp"

#include <GL/gl.h>
#include <imgui.h>
#include <imgui_impl_opengl3.h>

namespace mhascope::app {

bool initImGuiRenderer() { return ImGui_ImplOpenGL3_Init("#version 330 core"); }
void shutdownImGuiRenderer() { ImGui_ImplOpenGL3_Shutdown(); }
void imguiRendererNewFrame() { ImGui_ImplOpenGL3_NewFrame(); }
void renderImGuiDrawData() { ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData()); }
void rebuildImGuiFontTexture() {
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
}

void beginGlFrame(int framebufferWidth, int framebufferHeight, bool discard) {
  if (discard) {
    glEnable(GL_RASTERIZER_DISCARD);
  } else {
    glDisable(GL_RASTERIZER_DISCARD);
  }
  glViewport(0, 0, framebufferWidth, framebufferHeight);
  glClearColor(0.09f, 0.10f, 0.12f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

void finishGl() { glFinish(); }

const char* glRendererName() {
  const GLubyte* s = glGetString(GL_RENDERER);
  return s ? reinterpret_cast<const char*>(s) : "unknown";
}

int drainGlErrors() {
  int n = 0;
  while (glGetError() != GL_NO_ERROR && n < 1000) ++n;  // bounded: a lost context repeats forever
  return n;
}

}  // namespace mhascope::app
