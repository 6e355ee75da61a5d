// An ImGui context with a font atlas but no renderer, for the in-process panel tests: frames end in
// draw data nobody draws (textures are the stub's, tests/app/stub_texture.cpp). Declared first in a
// test's fixture, so the context outlives everything that draws into it.
#pragma once

#include <imgui.h>

#include <cstdint>

namespace mhascope::app {

class HeadlessImGui {
 public:
  explicit HeadlessImGui(ImVec2 size) {
    context_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = size;
    io.DeltaTime = 1.0f / 60.0f;
    io.Fonts->AddFontDefault();
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(static_cast<std::uintptr_t>(1)));
  }
  ~HeadlessImGui() { ImGui::DestroyContext(context_); }
  HeadlessImGui(const HeadlessImGui&) = delete;
  HeadlessImGui& operator=(const HeadlessImGui&) = delete;

 private:
  ImGuiContext* context_ = nullptr;
};

}  // namespace mhascope::app
