#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {

std::size_t decodeCodePoint(std::string_view s, std::size_t i, char32_t& cp) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  if (c0 < 0x80) {
    cp = c0;
    return 1;
  }
  std::size_t len = 0;
  char32_t min = 0;
  if ((c0 & 0xE0) == 0xC0) {
    len = 2;
    cp = c0 & 0x1Fu;
    min = 0x80;
  } else if ((c0 & 0xF0) == 0xE0) {
    len = 3;
    cp = c0 & 0x0Fu;
    min = 0x800;
  } else if ((c0 & 0xF8) == 0xF0) {
    len = 4;
    cp = c0 & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (len > s.size() - i) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void appendCodePoint(std::string& out, char32_t cp) {
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

namespace {

// Length of the maximal prefix at s[i] that could still start a well-formed sequence (at least 1):
// the unit the Unicode standard's "substitution of maximal subparts" replaces with one U+FFFD.
std::size_t maximalSubpart(std::string_view s, std::size_t i) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's allowed range
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    need = 1;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    need = 2;
    if (c0 == 0xE0) lo = 0xA0;
    if (c0 == 0xED) hi = 0x9F;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    need = 3;
    if (c0 == 0xF0) lo = 0x90;
    if (c0 == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  std::size_t k = 1;
  for (; k <= need && i + k < s.size(); ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    const bool okByte = (k == 1) ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!okByte) break;
  }
  return k;
}

}  // namespace

std::string replaceInvalidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    char32_t cp = 0;
    const std::size_t len = decodeCodePoint(bytes, i, cp);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += maximalSubpart(bytes, i);
    } else {
      out.append(bytes.substr(i, len));
      i += len;
    }
  }
  return out;
}

bool isValidUtf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    char32_t cp = 0;
    const std::size_t len = decodeCodePoint(bytes, i, cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

CodePoints decodeAll(std::string_view text) {
  CodePoints out;
  out.cps.reserve(text.size());
  out.offsets.reserve(text.size() + 1);
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    std::size_t len = decodeCodePoint(text, i, cp);
    if (len == 0) {  // not expected (callers pass valid UTF-8); step one byte and never loop
      cp = 0xFFFD;
      len = 1;
    }
    out.cps.push_back(cp);
    out.offsets.push_back(i);
    i += len;
  }
  out.offsets.push_back(text.size());
  return out;
}

}  // namespace mhascope::tokenize
