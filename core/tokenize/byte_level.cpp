#include "tokenize/byte_level.hpp"

#include <cstdio>

#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {
namespace {

constexpr bool printableByte(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// The map as a constant table: the n-th non-printable byte (in byte order) goes to U+0100 + n.
constexpr std::array<char32_t, 256> makeByteTable() {
  std::array<char32_t, 256> table{};
  char32_t n = 0;
  for (unsigned b = 0; b < 256; ++b) table[b] = printableByte(b) ? b : 0x100 + n++;
  return table;
}
constexpr std::array<char32_t, 256> kByteToUnicode = makeByteTable();

// Inverse for U+0100 … U+0143, the 68 moved bytes.
constexpr std::array<unsigned char, 68> makeMovedTable() {
  std::array<unsigned char, 68> table{};
  for (unsigned b = 0; b < 256; ++b) {
    if (!printableByte(b)) table[kByteToUnicode[b] - 0x100] = static_cast<unsigned char>(b);
  }
  return table;
}
constexpr std::array<unsigned char, 68> kMovedBytes = makeMovedTable();

}  // namespace

char32_t byteToUnicode(unsigned char b) { return kByteToUnicode[b]; }

std::optional<unsigned char> unicodeToByte(char32_t cp) {
  if (cp < 0x100) {
    if (printableByte(static_cast<unsigned>(cp))) return static_cast<unsigned char>(cp);
    return std::nullopt;
  }
  if (cp < 0x100 + kMovedBytes.size()) return kMovedBytes[cp - 0x100];
  return std::nullopt;
}

std::string bytesToVocabText(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) appendUtf8(out, byteToUnicode(static_cast<unsigned char>(ch)));
  return out;
}

std::string vocabTextToBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    const std::size_t len = decodeUtf8(text, i, cp);
    if (len == 0) {  // not UTF-8 (vocabularies are checked on load): keep the byte
      out += text[i];
      ++i;
      continue;
    }
    if (auto b = unicodeToByte(cp)) {
      out += static_cast<char>(*b);
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string visibleToken(std::string_view bytes) {
  std::string out;
  std::size_t i = 0;
  char buf[16];
  while (i < bytes.size()) {
    char32_t cp = 0;
    const std::size_t len = decodeUtf8(bytes, i, cp);
    if (len == 0) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned>(static_cast<unsigned char>(bytes[i])));
      out += buf;
      ++i;
      continue;
    }
    i += len;
    if (cp == ' ') {
      out += "\xE2\x90\xA3";  // U+2423 OPEN BOX
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
      std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
      out += buf;
    } else {
      appendUtf8(out, cp);
    }
  }
  return out;
}

}  // namespace mhascope::tokenize
