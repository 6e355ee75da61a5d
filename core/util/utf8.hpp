// UTF-8 in one place: decoding (strict RFC 3629, the rule of Rust's str::from_utf8 and of the
// safetensors reference), the one replacement rule for ill-formed bytes, encoding, and how a code
// point is spelled out when it cannot be shown ("U+1F600"). Every part of mhascope that reads
// UTF-8 (the word and BPE tokenizers, the .safetensors reader, the exporter's fonts, the trainer's
// text task, the window and the command line) decodes with these.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mhascope {

// One step of decoding at s[i] (i < s.size()).
struct Utf8Step {
  char32_t cp = 0;      // the code point, or U+FFFD where the bytes are ill-formed
  std::size_t len = 0;  // bytes taken, 1 … 4: the character, or the maximal subpart replaced
  bool valid = false;   // the bytes were a well-formed character
};

// Decodes the character at s[i]. Ill-formed bytes follow the Unicode standard's "substitution of
// maximal subparts" (§3.9, also WHATWG's decoder, Python's errors="replace" and Rust's
// from_utf8_lossy): one U+FFFD for the longest prefix that could still have begun a well-formed
// character, else for the single byte. So a truncated "E2 82" is one U+FFFD, while "C0 AF"
// (overlong), "ED A0 80" (a surrogate) and "F0 80 80" (overlong) are one U+FFFD per byte, since
// no well-formed character begins with C0, with ED A0 or with F0 80.
Utf8Step decodeUtf8Step(std::string_view s, std::size_t i);
// Strict: decodes the code point at s[i] into `cp`; returns its byte length (1 … 4), or 0 when the
// bytes there are not well-formed UTF-8 (a stray continuation byte, a truncated sequence, an
// overlong form, a surrogate, anything above U+10FFFF).
std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp);
// Offset of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t firstInvalidUtf8(std::string_view s);
bool isValidUtf8(std::string_view s);
// `bytes` with every ill-formed part replaced by U+FFFD as decodeUtf8Step replaces it; valid
// UTF-8 comes back unchanged, so text that crosses a boundary once is always valid after it.
std::string replaceInvalidUtf8(std::string_view bytes);
// Appends cp (≤ U+10FFFF) as 1 … 4 bytes.
void appendUtf8(std::string& out, char32_t cp);
// "U+00E9", "U+1F600": at least four hex digits, upper case.
std::string codePointName(char32_t cp);

}  // namespace mhascope
