// Ill-formed UTF-8 with the number of U+FFFD that the substitution of maximal subparts gives: one
// for each longest prefix that could still have begun a well-formed character, else one per byte.
// Every test that reads text through a different door (the word tokenizer, the exporter's fonts,
// the BPE tokenizer) checks these same counts.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace mhascope::testing {

struct IllFormedUtf8 {
  std::string_view bytes;
  std::size_t replacements;   // U+FFFD in the replaced text
  std::size_t firstInvalid;   // offset of the first ill-formed byte
  const char* why;
};

inline constexpr std::array<IllFormedUtf8, 15> kIllFormedUtf8 = {{
    {"\xF0\x9F\x98", 1, 0, "truncated 4-byte sequence: one subpart"},
    {"\xE1\x80", 1, 0, "truncated 3-byte sequence: one subpart"},
    {"\xE2\x82", 1, 0, "truncated 3-byte sequence (of U+20AC)"},
    {"\xC3", 1, 0, "truncated 2-byte sequence"},
    {"\xC0\xAF", 2, 0, "overlong '/': C0 never starts a character"},
    {"\xED\xA0\x80", 3, 0, "surrogate U+D800: ED is never followed by A0"},
    {"\xF0\x80\x80", 3, 0, "overlong: F0 is never followed by 80"},
    {"\xE0\x9F\x80", 3, 0, "overlong: E0 is never followed by 9F"},
    {"\xF4\x90\x80\x80", 4, 0, "above U+10FFFF: F4 is never followed by 90"},
    {"\xF5\x80", 2, 0, "F5 never starts a character"},
    {"\x80\xBF", 2, 0, "stray continuation bytes"},
    {"ab\xFF" "c", 1, 2, "a byte that UTF-8 never uses, between letters"},
    {"\xE2\x82" "a", 1, 0, "a truncated sequence ends where a letter begins"},
    {"\xF1\x80\x80\xE1\x80\xC2", 3, 0, "three truncated sequences in a row"},
    // The standard's own example (Unicode 15, §3.9, Table 3-8 and the text around it).
    {"a\xF1\x80\x80\xE1\x80\xC2" "b\x80" "c\x80\xBF" "d", 6, 1, "Table 3-8"},
}};

inline std::size_t countReplacements(std::string_view text) {
  std::size_t n = 0;
  for (std::size_t at = text.find("\xEF\xBF\xBD"); at != std::string_view::npos; at = text.find("\xEF\xBF\xBD", at + 3)) ++n;
  return n;
}

}  // namespace mhascope::testing
