// The GL side of a frame outside textures: ImGui's OpenGL3 renderer backend, viewport + clear,
// and counting GL errors (the tests require none, including after 0x0 and tiny framebuffers).
#pragma once

namespace mhascope::app {

// Dear ImGui's OpenGL3 renderer backend ("#version 330 core").
bool initImGuiRenderer();
void shutdownImGuiRenderer();
void imguiRendererNewFrame();
void renderImGuiDrawData();
// After the font atlas changed (content scale change): rebuild its texture.
void rebuildImGuiFontTexture();

// Viewport and clear. With discard, the frame's GL calls (buffers, textures, draws; their errors
// still count) are made but the rasteriser drops every primitive and the clear: no pixel is
// written, and a software renderer spends next to nothing on the frame.
void beginGlFrame(int framebufferWidth, int framebufferHeight, bool discard = false);
// "llvmpipe (LLVM 15.0.6, 256 bits)" — which GL implementation draws (for benchmark reports).
const char* glRendererName();
// Waits until the GPU has finished (the benchmark's breakdown only: it stalls the pipeline).
void finishGl();
// Drains glGetError(); returns how many errors were pending.
int drainGlErrors();

}  // namespace mhascope::app
