// "See as": how a picture looks to someone with a colour-vision deficiency, or in grey — one
// pure function of a colour, used by the whole window (one pass over the framebuffer,
// app/render/see_as_pass.cpp, with the same matrices) and by every exported picture (the
// exporter's one colour path, core/export/ink.hpp).
//
// The deficiencies are simulated by the matrices of Machado, Oliveira & Fernandes, "A
// Physiologically-based Model for Simulation of Color Vision Deficiency", IEEE TVCG 15(6), 2009,
// at severity 1.0 (protanopia, deuteranopia, tritanopia: the full loss of one cone type). They
// act on linear RGB: an 8-bit sRGB colour is decoded (IEC 61966-2-1 curve), multiplied, clamped
// to [0, 1] and encoded again. Greyscale is the relative luminance Y of the same linear RGB
// (Rec. 709 / sRGB primaries) on all three channels. Every row of every matrix sums to 1, so a
// grey stays the same grey.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "color/colormap.hpp"  // RGBA8
#include "util/result.hpp"

namespace mhascope {

enum class SeeAs {
  Normal,        // no change
  Protanopia,    // no long-wavelength (red) cones
  Deuteranopia,  // no medium-wavelength (green) cones
  Tritanopia,    // no short-wavelength (blue) cones
  Greyscale,     // lightness only (a grey printer, or achromatopsia)
};
inline constexpr int kSeeAsCount = 5;

// In menu order.
const std::array<SeeAs, kSeeAsCount>& allSeeAs();
// "normal" | "protanopia" | "deuteranopia" | "tritanopia" | "greyscale"
const char* seeAsName(SeeAs kind);
// "Normal vision", "Protanopia (no red cones)", … — the menu's words.
const char* seeAsLabel(SeeAs kind);
// Case-insensitive; "grayscale" is greyscale. The error names the input and the allowed names.
Result<SeeAs> seeAsFromName(std::string_view name);

// The 3 × 3 matrix in linear RGB, row-major (out = M · in); the identity for Normal.
const std::array<double, 9>& seeAsMatrix(SeeAs kind);

// sRGB in [0, 1] → sRGB in [0, 1] (the exporter's vector colours).
struct Rgb01 {
  double r = 0, g = 0, b = 0;
};
Rgb01 seeAsRgb(SeeAs kind, Rgb01 c);
// 8-bit colour → 8-bit colour, each channel rounded to the nearest 8-bit sRGB value; alpha kept.
RGBA8 seeAsColor(SeeAs kind, RGBA8 c);
// `count` RGBA pixels (R, G, B, A bytes) in place, alpha kept.
void seeAsPixels(SeeAs kind, std::uint8_t* rgba, std::size_t count);

// CIE L* (0 … 100) of an 8-bit sRGB colour: what "differs by lightness" is measured in.
double lightnessOf(RGBA8 c);

}  // namespace mhascope
