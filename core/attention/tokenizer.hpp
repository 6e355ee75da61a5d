// Text → tokens. Whitespace tokenisation that is UTF-8 safe: ill-formed bytes become U+FFFD at
// this boundary (util/utf8's replaceInvalidUtf8, the rule the BPE tokenizer follows too), so
// nothing downstream (labels, fonts, exporters) ever sees broken UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mhascope {

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
// 1.86 cannot render, become "U+1F600"; control characters become "U+0007"; ill-formed bytes
// become U+FFFD as replaceInvalidUtf8 replaces them.
std::string displayToken(std::string_view token);

// Number of code points (for layout), counting an ill-formed part as the U+FFFD it would become.
std::size_t utf8Length(std::string_view s);

}  // namespace mhascope
