// The "see as" simulation (see_as.hpp): decode, one matrix in linear RGB, clamp, encode.
#include "color/see_as.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace mhascope {
namespace {

constexpr std::array<SeeAs, kSeeAsCount> kAll = {SeeAs::Normal, SeeAs::Protanopia, SeeAs::Deuteranopia,
                                                 SeeAs::Tritanopia, SeeAs::Greyscale};

// Machado, Oliveira & Fernandes (2009), the table of simulation matrices at severity 1.0,
// in linear RGB.
constexpr std::array<double, 9> kIdentity = {1, 0, 0, 0, 1, 0, 0, 0, 1};
constexpr std::array<double, 9> kProtanopia = {0.152286, 1.052583,  -0.204868,  //
                                               0.114503, 0.786281,  0.099216,   //
                                               -0.003882, -0.048116, 1.051998};
constexpr std::array<double, 9> kDeuteranopia = {0.367322, 0.860646, -0.227968,  //
                                                 0.280085, 0.672501, 0.047413,   //
                                                 -0.011820, 0.042940, 0.968881};
constexpr std::array<double, 9> kTritanopia = {1.255528, -0.076749, -0.178779,  //
                                               -0.078411, 0.930809, 0.147602,   //
                                               0.004733, 0.691367, 0.303900};
// Relative luminance of linear sRGB (Rec. 709 primaries, D65) on every channel.
constexpr std::array<double, 9> kGreyscale = {0.2126, 0.7152, 0.0722,  //
                                              0.2126, 0.7152, 0.0722,  //
                                              0.2126, 0.7152, 0.0722};

double decode(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double encode(double c) { return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1.0 / 2.4) - 0.055; }

// 8-bit ↔ linear without a pow per pixel: the 256 decoded values, and the 255 linear values
// halfway (in sRGB) between neighbouring 8-bit codes, so that encoding is an exact rounding.
struct Tables {
  std::array<double, 256> linear{};
  std::array<double, 255> upper{};  // upper[k]: linear value of sRGB (k + 0.5) / 255
  Tables() {
    for (int i = 0; i < 256; ++i) linear[static_cast<std::size_t>(i)] = decode(i / 255.0);
    for (int k = 0; k < 255; ++k) upper[static_cast<std::size_t>(k)] = decode((k + 0.5) / 255.0);
  }
};
const Tables& tables() {
  static const Tables t;  // immutable after construction (thread-safe initialisation)
  return t;
}

std::uint8_t toByte(double linear) {
  const auto& up = tables().upper;
  return static_cast<std::uint8_t>(std::upper_bound(up.begin(), up.end(), linear) - up.begin());
}

void apply(const std::array<double, 9>& m, double& r, double& g, double& b) {
  const double r2 = m[0] * r + m[1] * g + m[2] * b;
  const double g2 = m[3] * r + m[4] * g + m[5] * b;
  const double b2 = m[6] * r + m[7] * g + m[8] * b;
  r = std::clamp(r2, 0.0, 1.0);
  g = std::clamp(g2, 0.0, 1.0);
  b = std::clamp(b2, 0.0, 1.0);
}

}  // namespace

const std::array<SeeAs, kSeeAsCount>& allSeeAs() { return kAll; }

const char* seeAsName(SeeAs kind) {
  switch (kind) {
    case SeeAs::Normal: return "normal";
    case SeeAs::Protanopia: return "protanopia";
    case SeeAs::Deuteranopia: return "deuteranopia";
    case SeeAs::Tritanopia: return "tritanopia";
    case SeeAs::Greyscale: return "greyscale";
  }
  return "?";
}

const char* seeAsLabel(SeeAs kind) {
  switch (kind) {
    case SeeAs::Normal: return "Normal vision";
    case SeeAs::Protanopia: return "Protanopia (no red cones)";
    case SeeAs::Deuteranopia: return "Deuteranopia (no green cones)";
    case SeeAs::Tritanopia: return "Tritanopia (no blue cones)";
    case SeeAs::Greyscale: return "Greyscale";
  }
  return "?";
}

Result<SeeAs> seeAsFromName(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "grayscale") lower = "greyscale";
  for (SeeAs k : kAll) {
    if (lower == seeAsName(k)) return k;
  }
  std::string allowed;
  for (SeeAs k : kAll) allowed += std::string(allowed.empty() ? "" : ", ") + seeAsName(k);
  return makeError("unknown see-as '" + std::string(name) + "' (choose one of: " + allowed + ")");
}

const std::array<double, 9>& seeAsMatrix(SeeAs kind) {
  switch (kind) {
    case SeeAs::Normal: return kIdentity;
    case SeeAs::Protanopia: return kProtanopia;
    case SeeAs::Deuteranopia: return kDeuteranopia;
    case SeeAs::Tritanopia: return kTritanopia;
    case SeeAs::Greyscale: return kGreyscale;
  }
  return kIdentity;
}

Rgb01 seeAsRgb(SeeAs kind, Rgb01 c) {
  if (kind == SeeAs::Normal) return c;
  double r = decode(std::clamp(c.r, 0.0, 1.0)), g = decode(std::clamp(c.g, 0.0, 1.0)), b = decode(std::clamp(c.b, 0.0, 1.0));
  apply(seeAsMatrix(kind), r, g, b);
  return {encode(r), encode(g), encode(b)};
}

RGBA8 seeAsColor(SeeAs kind, RGBA8 c) {
  if (kind == SeeAs::Normal) return c;
  const auto& lin = tables().linear;
  double r = lin[c.r], g = lin[c.g], b = lin[c.b];
  apply(seeAsMatrix(kind), r, g, b);
  return RGBA8{toByte(r), toByte(g), toByte(b), c.a};
}

void seeAsPixels(SeeAs kind, std::uint8_t* rgba, std::size_t count) {
  if (kind == SeeAs::Normal) return;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint8_t* p = rgba + 4 * i;
    const RGBA8 out = seeAsColor(kind, RGBA8{p[0], p[1], p[2], p[3]});
    p[0] = out.r;
    p[1] = out.g;
    p[2] = out.b;
  }
}

double lightnessOf(RGBA8 c) {
  const auto& lin = tables().linear;
  const double y = 0.2126729 * lin[c.r] + 0.7151522 * lin[c.g] + 0.0721750 * lin[c.b];
  const double f = y > 216.0 / 24389.0 ? std::cbrt(y) : (24389.0 / 27.0 * y + 16.0) / 116.0;
  return 116.0 * f - 16.0;
}

}  // namespace mhascope
