// The UI fonts at the content scale (see fonts.hpp).
#include "shell/fonts.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

namespace mhascope::app {
namespace {

constexpr const char* kFontDir = "/usr/share/fonts/truetype/dejavu/";
constexpr float kBaseFontPx = 15.0f;  // at content scale 1
// Fonts with CJK glyphs, merged in when one is installed (DejaVu has none).
constexpr const char* kCjkFonts[] = {"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
                                     "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
                                     "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"};
// Code point ranges beyond ImGui's default Latin + Latin-1 (pairs, zero-terminated).
constexpr ImWchar kExtraRanges[] = {
    0x0100, 0x024F,  // Latin Extended-A/B (ő, ș, ł ...)
    0x0370, 0x03FF,  // Greek (α, β, Σ)
    0x0400, 0x04FF,  // Cyrillic
    0x1D00, 0x1DBF,  // phonetic extensions (superscript ᵀ)
    0x2000, 0x206F,  // general punctuation (– — … ‘ ’)
    0x2070, 0x209F,  // superscripts and subscripts
    0x2190, 0x21FF,  // arrows
    0x2200, 0x22FF,  // mathematical operators (√ ∞ ·)
    0x2423, 0x2423,  // ␣, the visible space a model's tokens are drawn with
    0x2500, 0x25FF,  // box drawing, blocks, geometric shapes (▶ ◀ ■)
    0x2700, 0x27BF,  // dingbats (❚)
    0xFFFD, 0xFFFD,  // the replacement character of invalid UTF-8
    0,
};
bool fileExists(const char* path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

void Fonts::build(float scale, int limit) {
  // The atlas must fit one texture: past GL_MAX_TEXTURE_SIZE every glyph draws as a box. A large
  // --ui-scale with a CJK font merged in can exceed it, so drop the CJK glyphs first, then the scale.
  requestedScale_ = scale;
  bool withCjk = true;
  for (;;) {
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    ImFontGlyphRangesBuilder ranges;
    ranges.AddRanges(io.Fonts->GetGlyphRangesDefault());
    ranges.AddRanges(kExtraRanges);
    glyphRanges_.clear();
    ranges.BuildRanges(&glyphRanges_);

    const std::string sans = std::string(kFontDir) + "DejaVuSans.ttf";
    const std::string mono = std::string(kFontDir) + "DejaVuSansMono.ttf";
    const char* cjk = nullptr;
    for (const char* path : kCjkFonts) {
      if (withCjk && fileExists(path)) {
        cjk = path;
        break;
      }
    }
    auto addFont = [&](const std::string& path, float px) -> ImFont* {
      if (!fileExists(path.c_str())) return nullptr;
      ImFontConfig cfg;
      cfg.OversampleH = 2;
      ImFont* f = io.Fonts->AddFontFromFileTTF(path.c_str(), px * scale, &cfg, glyphRanges_.Data);
      if (f && cjk) {  // CJK glyphs merged into the same font, when a CJK font is installed
        ImFontConfig merge;
        merge.MergeMode = true;
        io.Fonts->AddFontFromFileTTF(cjk, px * scale, &merge, io.Fonts->GetGlyphRangesChineseSimplifiedCommon());
      }
      return f;
    };
    main_ = addFont(sans, kBaseFontPx);
    if (!main_) {
      std::fprintf(stderr, "mhascope: %s not found (install fonts-dejavu-core); using ImGui's built-in font, "
                           "non-ASCII tokens will be spelled as U+XXXX\n", sans.c_str());
      ImFontConfig cfg;
      cfg.SizePixels = 13.0f * scale;
      main_ = io.Fonts->AddFontDefault(&cfg);
    }
    mono_ = addFont(mono, kBaseFontPx - 2.0f);  // 80-column pseudocode fits the side column
    title_ = addFont(sans, kBaseFontPx * 1.35f);
    if (!mono_) mono_ = main_;
    if (!title_) title_ = main_;
    io.FontDefault = main_;
    io.Fonts->Build();
    const ImFontAtlas* atlas = io.Fonts;
    if (limit <= 0 || (atlas->TexWidth <= limit && atlas->TexHeight <= limit)) break;
    if (withCjk && cjk) {
      std::fprintf(stderr, "mhascope: at UI scale %.2f the font atlas with CJK glyphs (%d x %d) exceeds the GPU's "
                           "texture limit of %d; CJK tokens will be spelled as U+XXXX\n",
                   static_cast<double>(scale), atlas->TexWidth, atlas->TexHeight, limit);
      withCjk = false;
      continue;
    }
    if (scale <= 0.5f) break;
    const float smaller = std::max(0.5f, scale * 0.8f);
    std::fprintf(stderr, "mhascope: at UI scale %.2f the font atlas (%d x %d) exceeds the GPU's texture limit of %d; "
                         "using UI scale %.2f\n",
                 static_cast<double>(scale), atlas->TexWidth, atlas->TexHeight, limit, static_cast<double>(smaller));
    scale = smaller;
  }
  scale_ = scale;

  // Sizes scale with the monitor, from the unscaled style so changes never compound.
  ImGuiStyle& style = ImGui::GetStyle();
  style = baseStyle_;
  style.ScaleAllSizes(scale);
}

}  // namespace mhascope::app
