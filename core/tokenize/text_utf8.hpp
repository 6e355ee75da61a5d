// UTF-8 at the tokenizer's boundary: code points with their byte offsets, quoting for messages.
// Decoding, validity and the replacement of ill-formed bytes are util/utf8's (decodeUtf8Step,
// isValidUtf8, replaceInvalidUtf8: one rule for all of mhascope), linked as the small library
// mhascope_utf8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/utf8.hpp"

namespace mhascope::tokenize {

// 'text' for messages, built by appending (GCC 12 warns falsely on "'" + temporary + "'").
std::string quote(std::string_view text);

// A piece of text as code points with the byte offset of each (plus one past the end), so the
// splitters work on code points and hand back byte ranges.
struct CodePoints {
  std::vector<char32_t> cps;          // (n,)
  std::vector<std::size_t> offsets;   // (n + 1,) byte offset of cps[k]; offsets[n] = byte length
};
// `text` should be valid UTF-8; an ill-formed part would read as one U+FFFD per maximal subpart,
// as replaceInvalidUtf8 has it.
CodePoints decodeAll(std::string_view text);

}  // namespace mhascope::tokenize
