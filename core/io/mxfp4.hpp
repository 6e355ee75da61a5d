// MXFP4, the microscaling 4-bit float format gpt-oss's released experts are stored in: every block of 32 numbers is
// 16 bytes of FP4 e2m1 values (two a byte, the low nibble first) and one scale byte E8M0 (a power of two, bias 127),
// as transformers' gpt-oss integration (mxfp4.py) unpacks them. A model's `<name>_blocks` (…, R, G, 16) U8 and
// `<name>_scales` (…, R, G) U8 hold the (…, R, G·32) tensor `<name>`; the decoding here takes bytes, the weight store
// reads them.
#pragma once

#include <array>
#include <cstdint>

namespace mhascope {

// The e2m1 value of each nibble: sign bit, 2 exponent bits, 1 mantissa bit (e = 0: m/2; else 2^(e-1)(1 + m/2)).
inline constexpr std::array<float, 16> kFp4Values = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                     -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline constexpr int kMxfp4BlockValues = 32;  // numbers a scale byte covers
inline constexpr int kMxfp4BlockBytes = 16;   // their packed bytes
inline constexpr int kMxfp4ScaleBias = 127;   // a scale byte s multiplies its block by 2^(s - 127)

// `groups` blocks: blocks (groups, 16) bytes and scales (groups) bytes into out (groups, 32) floats,
// out[32 g + 2 j] = FP4[low nibble of byte j] · 2^(s_g - 127), out[32 g + 2 j + 1] = FP4[high nibble] · the same.
// A scale byte of 255 is not a number in the MX format (E8M0's NaN): its block comes out NaN, which the caller's
// finite check refuses naming the tensor.
void dequantiseMxfp4(const std::uint8_t* blocks, const std::uint8_t* scales, std::int64_t groups, float* out);

}  // namespace mhascope
