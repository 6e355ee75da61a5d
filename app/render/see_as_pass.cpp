// The window's "see as" pass (see_as_pass.hpp): copy the frame into a texture, draw it back
// through a shader. GL 3.3 entry points beyond 1.1 are called through their prototypes: Linux's
// libGL (GLVND) exports every core function and dispatches it to the current context's driver.
#include "render/see_as_pass.hpp"

#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>

#include <cstdio>

namespace mhascope::app {
namespace {

// One triangle that covers the screen, from gl_VertexID alone (no vertex buffer).
constexpr const char* kVertex = R"(#version 330 core
out vec2 uv;
void main() {
  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
  uv = p;
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
)";

// The IEC 61966-2-1 curve both ways; the matrix acts on linear RGB, as in core/color/see_as.cpp.
constexpr const char* kFragment = R"(#version 330 core
in vec2 uv;
out vec4 colour;
uniform sampler2D frame;
uniform mat3 simulate;
vec3 decode(vec3 c) { return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(0.04045, c)); }
vec3 encode(vec3 c) { return mix(12.92 * c, 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055, step(0.0031308, c)); }
void main() {
  vec3 linear = clamp(simulate * decode(texture(frame, uv).rgb), 0.0, 1.0);
  colour = vec4(encode(linear), 1.0);
}
)";

GLuint compile(GLenum type, const char* source) {
  const GLuint s = glCreateShader(type);
  glShaderSource(s, 1, &source, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[512] = {};
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    std::fprintf(stderr, "mhascope: the see-as shader does not compile: %s\n", log);
    glDeleteShader(s);
    return 0;
  }
  return s;
}

}  // namespace

SeeAsPass::~SeeAsPass() = default;  // GL objects go with release(), while a context exists

bool SeeAsPass::create() {
  const GLuint vs = compile(GL_VERTEX_SHADER, kVertex), fs = compile(GL_FRAGMENT_SHADER, kFragment);
  if (vs == 0 || fs == 0) {
    if (vs) glDeleteShader(vs);
    if (fs) glDeleteShader(fs);
    return false;
  }
  program_ = glCreateProgram();
  glAttachShader(program_, vs);
  glAttachShader(program_, fs);
  glLinkProgram(program_);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(program_, GL_LINK_STATUS, &ok);
  if (!ok) {
    glDeleteProgram(program_);
    program_ = 0;
    std::fprintf(stderr, "mhascope: the see-as shader does not link\n");
    return false;
  }
  matrixUniform_ = glGetUniformLocation(program_, "simulate");
  glUseProgram(program_);
  glUniform1i(glGetUniformLocation(program_, "frame"), 0);
  glUseProgram(0);
  glGenVertexArrays(1, &vao_);
  glGenTextures(1, &texture_);
  glBindTexture(GL_TEXTURE_2D, texture_);
  // Nearest: one texel per pixel, read back unblurred.
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  return true;
}

bool SeeAsPass::apply(SeeAs kind, int width, int height) {
  if (kind == SeeAs::Normal || width <= 0 || height <= 0 || failed_) return !failed_;
  if (program_ == 0 && !create()) {
    failed_ = true;
    return false;
  }
  GLint lastTexture = 0, lastProgram = 0, lastVao = 0, lastActive = 0;
  glGetIntegerv(GL_ACTIVE_TEXTURE, &lastActive);
  glActiveTexture(GL_TEXTURE0);
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &lastTexture);
  glGetIntegerv(GL_CURRENT_PROGRAM, &lastProgram);
  glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &lastVao);
  const GLboolean blend = glIsEnabled(GL_BLEND), scissor = glIsEnabled(GL_SCISSOR_TEST);

  glBindTexture(GL_TEXTURE_2D, texture_);
  if (width != texW_ || height != texH_) {
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    texW_ = width;
    texH_ = height;
  }
  glCopyTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, 0, 0, width, height);  // the frame as drawn
  glDisable(GL_BLEND);
  glDisable(GL_SCISSOR_TEST);
  glViewport(0, 0, width, height);
  glUseProgram(program_);
  // seeAsMatrix is row-major (out = M · in); GL wants column-major, hence transpose = true.
  GLfloat m[9];
  const auto& src = seeAsMatrix(kind);
  for (int i = 0; i < 9; ++i) m[i] = static_cast<GLfloat>(src[static_cast<std::size_t>(i)]);
  glUniformMatrix3fv(matrixUniform_, 1, GL_TRUE, m);
  glBindVertexArray(vao_);
  glDrawArrays(GL_TRIANGLES, 0, 3);

  glBindVertexArray(static_cast<GLuint>(lastVao));
  glUseProgram(static_cast<GLuint>(lastProgram));
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(lastTexture));
  glActiveTexture(static_cast<GLenum>(lastActive));
  if (blend) glEnable(GL_BLEND);
  if (scissor) glEnable(GL_SCISSOR_TEST);
  return true;
}

void SeeAsPass::release() {
  if (program_) glDeleteProgram(program_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
  if (texture_) glDeleteTextures(1, &texture_);
  program_ = vao_ = texture_ = 0;
  texW_ = texH_ = 0;
}

}  // namespace mhascope::app
