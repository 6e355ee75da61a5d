// UTF-8 at the tokenizer's boundary: lossy replacement, validity, code points with their byte
// offsets. Strict decoding and encoding are util/utf8's (decodeUtf8, appendUtf8: RFC 3629, no
// overlong forms, no surrogates, nothing above U+10FFFF), linked as the small library mhascope_utf8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/utf8.hpp"

namespace mhascope::tokenize {

// Every ill-formed sequence becomes U+FFFD (one per maximal ill-formed prefix, as Rust's
// String::from_utf8_lossy and Python's errors="replace" do), so tokens always hold valid UTF-8.
std::string replaceInvalidUtf8(std::string_view bytes);
bool isValidUtf8(std::string_view bytes);
// 'text' for messages, built by appending (GCC 12 warns falsely on "'" + temporary + "'").
std::string quote(std::string_view text);

// A piece of text as code points with the byte offset of each (plus one past the end), so the
// splitters work on code points and hand back byte ranges.
struct CodePoints {
  std::vector<char32_t> cps;          // (n,)
  std::vector<std::size_t> offsets;   // (n + 1,) byte offset of cps[k]; offsets[n] = byte length
};
// `text` must be valid UTF-8.
CodePoints decodeAll(std::string_view text);

}  // namespace mhascope::tokenize
