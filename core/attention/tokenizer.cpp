// Whitespace tokenisation and display labels for tokens.
#include "attention/tokenizer.hpp"

#include "util/utf8.hpp"

#include <array>
#include <cstdint>
#include <cstdio>

namespace mhascope {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Filler words used to extend a sentence past its end (plain English, chosen for mhascope).
constexpr std::array<std::string_view, 16> kFiller = {"and", "then", "the", "dog", "ran", "to",  "a",    "big",
                                                      "red", "ball", "near", "the", "old", "tree", "by", "noon"};

}  // namespace

std::vector<std::string> splitWords(std::string_view text) {
  const std::string clean = replaceInvalidUtf8(text);
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : clean) {
    if (isSpace(c)) {
      if (!cur.empty()) tokens.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) tokens.push_back(std::move(cur));
  return tokens;
}

std::vector<std::string> splitBatch(std::string_view text) {
  std::vector<std::string> items;
  std::string cur;
  auto flush = [&] {
    if (!splitWords(cur).empty()) items.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (c == '|' || c == '\n') {
      flush();
    } else {
      cur += c;
    }
  }
  flush();
  return items;
}

std::string batchTextProblem(std::string_view text, std::string_view flag) {
  const std::string f(flag);
  if (text.find_first_of("\r\n") != std::string_view::npos) {
    return f + " contains a line break; on the command line batch items are separated by '|' only "
               "(write \"first sentence | second sentence\")";
  }
  if (splitWords(text).empty()) return "";  // "enter at least one token" comes later, with the sizes
  std::size_t item = 0, start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '|') {
      if (splitWords(text.substr(start, i - start)).empty()) {
        return f + " has an empty batch item (item " + std::to_string(item) +
               ", counted from 0, between two '|' or at an end); remove the extra '|' or write a sentence there";
      }
      ++item;
      start = i + 1;
    }
  }
  return "";
}

std::vector<std::string> resizeTokens(std::vector<std::string> tokens, int n) {
  if (n < 0) n = 0;
  const auto want = static_cast<std::size_t>(n);
  if (tokens.size() > want) tokens.resize(want);
  std::size_t k = 0;
  while (tokens.size() < want) tokens.emplace_back(kFiller[k++ % kFiller.size()]);
  return tokens;
}

std::string displayToken(std::string_view token) {
  std::string out;
  std::size_t i = 0;
  while (i < token.size()) {
    const Utf8Step step = decodeUtf8Step(token, i);
    if (!step.valid) {
      out += kReplacement;
    } else if (step.cp > 0xFFFF || step.cp < 0x20 || step.cp == 0x7F) {
      out += codePointName(step.cp);
    } else {
      out.append(token.substr(i, step.len));
    }
    i += step.len;
  }
  return out;
}

std::size_t utf8Length(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); i += decodeUtf8Step(s, i).len) ++n;
  return n;
}

}  // namespace mhascope
