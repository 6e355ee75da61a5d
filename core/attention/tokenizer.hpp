// Text → tokens. Whitespace tokenisation that is UTF-8 safe: invalid bytes become U+FFFD at
// this boundary, so nothing downstream (labels, fonts, exporters) ever sees broken UTF-8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mhascope {

// Replaces every invalid UTF-8 sequence (stray continuation bytes, truncated sequences, overlong
// encodings, surrogates, code points above U+10FFFF) with U+FFFD.
std::string sanitizeUtf8(std::string_view text);

// Splits on ASCII whitespace (space, tab, CR, LF, FF, VT); empty when the text has no token.
std::vector<std::string> splitWords(std::string_view text);

// Splits a batch written as "first sentence | second sentence" (or one per line) into items;
// blank items are dropped.
std::vector<std::string> splitBatch(std::string_view text);

// For the command line, where '|' is the only item separator: a message when the text holds a
// line break (which splitBatch would silently take as a new item) or an empty item ("a b||c",
// a leading or trailing '|'), which splitBatch would drop. Empty when the text is fine.
std::string batchTextProblem(std::string_view text, std::string_view flag);

// Cuts the token list to n or extends it with filler words (a fixed, documented list) so a
// token-count slider can go beyond the sentence.
std::vector<std::string> resizeTokens(std::vector<std::string> tokens, int n);

// A label that any font can draw: code points above U+FFFF (emoji, rare CJK), which Dear ImGui
// 1.86 cannot render, become "U+1F600"; control characters become "U+0007".
std::string displayToken(std::string_view token);

// Number of code points (for layout); assumes valid UTF-8.
std::size_t utf8Length(std::string_view s);

}  // namespace mhascope
