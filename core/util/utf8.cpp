#include "util/utf8.hpp"

#include <cstdint>
#include <cstdio>

namespace mhascope {

Utf8Step decodeUtf8Step(std::string_view s, std::size_t i) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  if (c0 < 0x80) return {c0, 1, true};
  // The well-formed sequences (the standard's Table 3-7): the lead byte fixes the length and the
  // range of the second byte, which is what excludes overlong forms, surrogates and code points
  // above U+10FFFF; every later byte is 80 … BF.
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t cp = 0;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    len = 2;
    cp = c0 & 0x1Fu;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    len = 3;
    cp = c0 & 0x0Fu;
    if (c0 == 0xE0) lo = 0xA0;  // below: overlong
    if (c0 == 0xED) hi = 0x9F;  // above: surrogates D800 … DFFF
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    len = 4;
    cp = c0 & 0x07u;
    if (c0 == 0xF0) lo = 0x90;  // below: overlong
    if (c0 == 0xF4) hi = 0x8F;  // above: beyond U+10FFFF
  } else {
    return {0xFFFD, 1, false};  // a continuation byte, C0, C1 or F5 … FF: never starts a character
  }
  for (std::size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return {0xFFFD, k, false};  // truncated: the bytes so far are one subpart
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < lo || c > hi) return {0xFFFD, k, false};  // this byte may begin the next character
    cp = (cp << 6) | (c & 0x3Fu);
    lo = 0x80;
    hi = 0xBF;
  }
  return {cp, len, true};
}

std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp) {
  const Utf8Step step = decodeUtf8Step(s, i);
  if (!step.valid) return 0;
  cp = step.cp;
  return step.len;
}

std::size_t firstInvalidUtf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Step step = decodeUtf8Step(s, i);
    if (!step.valid) return i;
    i += step.len;
  }
  return std::string_view::npos;
}

bool isValidUtf8(std::string_view s) { return firstInvalidUtf8(s) == std::string_view::npos; }

std::string replaceInvalidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const Utf8Step step = decodeUtf8Step(bytes, i);
    if (step.valid) {
      out.append(bytes.substr(i, step.len));
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
    }
    i += step.len;
  }
  return out;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string codePointName(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

}  // namespace mhascope
