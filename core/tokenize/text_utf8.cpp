#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {

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
    const std::size_t len = decodeUtf8(bytes, i, cp);
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
    const std::size_t len = decodeUtf8(bytes, i, cp);
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
    std::size_t len = decodeUtf8(text, i, cp);
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
