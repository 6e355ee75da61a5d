// The hand-written pre-tokenizer regexes (see pre_tokenize.hpp). Each matcher returns the length
// in code points of the match at position i; the caller cuts the piece and moves on, which is
// what a global regex scan (findall / Split with "Isolated") does. Every code point is whitespace,
// a letter, a number or "other", and each regex ends in \s+, so a match of at least one code
// point always exists.
#include "tokenize/pre_tokenize.hpp"

#include <algorithm>
#include <cctype>

#include "tokenize/text_utf8.hpp"
#include "tokenize/unicode_classes.hpp"

namespace mhascope::tokenize {
namespace {

using Cps = std::vector<char32_t>;

// [^\s\p{L}\p{N}]
bool isOther(char32_t c) { return !isWhitespace(c) && !isLetter(c) && !isNumber(c); }
bool isLineBreak(char32_t c) { return c == '\r' || c == '\n'; }

std::size_t runOf(const Cps& c, std::size_t i, bool (*pred)(char32_t)) {
  std::size_t j = i;
  while (j < c.size() && pred(c[j])) ++j;
  return j - i;
}

// 's|'t|'re|'ve|'m|'ll|'d, case-sensitive or (?i:…). Under (?i) Oniguruma also folds U+017F
// (long s) to s and U+212A (Kelvin sign) to k; only the former can occur in these suffixes.
std::size_t contraction(const Cps& c, std::size_t i, bool ignoreCase) {
  if (c[i] != '\'' || i + 1 >= c.size()) return 0;
  auto lower = [&](std::size_t k) -> char32_t {
    if (k >= c.size()) return 0;
    const char32_t x = c[k];
    if (!ignoreCase) return x;
    if (x >= 'A' && x <= 'Z') return x - 'A' + 'a';
    if (x == 0x17F) return 's';
    return x;
  };
  const char32_t a = lower(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const char32_t b = lower(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// " ?X+" for a class X.
std::size_t optionalSpaceThenRun(const Cps& c, std::size_t i, bool (*pred)(char32_t)) {
  if (c[i] == ' ' && i + 1 < c.size() && pred(c[i + 1])) return 1 + runOf(c, i + 1, pred);
  return runOf(c, i, pred);
}

// \s+(?!\S) then \s+: a whitespace run, minus its last code point when a non-space follows it and
// the run is longer than one (the greedy \s+ backs off one step so the lookahead holds).
std::size_t whitespaceRun(const Cps& c, std::size_t i) {
  const std::size_t run = runOf(c, i, isWhitespace);
  if (run == 0) return 0;
  if (i + run == c.size() || run == 1) return run;
  return run - 1;
}

std::size_t matchGpt2(const Cps& c, std::size_t i) {
  if (std::size_t n = contraction(c, i, /*ignoreCase=*/false)) return n;
  if (std::size_t n = optionalSpaceThenRun(c, i, isLetter)) return n;
  if (std::size_t n = optionalSpaceThenRun(c, i, isNumber)) return n;
  if (std::size_t n = optionalSpaceThenRun(c, i, isOther)) return n;
  if (std::size_t n = whitespaceRun(c, i)) return n;
  return 1;  // unreachable: every code point is in one of the classes above
}

// \s*[\r\n]+|\s+(?!\S)|\s+, the end of the Llama-3 and o200k regexes.
std::size_t lineBreaksThenWhitespace(const Cps& c, std::size_t i) {
  if (!isWhitespace(c[i])) return 1;  // unreachable: every code point is in one of the classes before
  // \s*[\r\n]+: the greedy \s* backs off to the last line break inside the whitespace run.
  const std::size_t run = runOf(c, i, isWhitespace);
  for (std::size_t k = run; k-- > 0;) {
    if (isLineBreak(c[i + k])) return k + 1;
  }
  return whitespaceRun(c, i);  // \s+(?!\S)|\s+
}

// The Llama-3 / Qwen2 family; maxDigits is 3 (\p{N}{1,3}) or 1 (\p{N}).
std::size_t matchLlama(const Cps& c, std::size_t i, std::size_t maxDigits) {
  const std::size_t n = c.size();
  if (std::size_t m = contraction(c, i, /*ignoreCase=*/true)) return m;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!isLineBreak(c[i]) && !isLetter(c[i]) && !isNumber(c[i]) && i + 1 < n && isLetter(c[i + 1])) {
    return 1 + runOf(c, i + 1, isLetter);
  }
  if (isLetter(c[i])) return runOf(c, i, isLetter);
  // \p{N}{1,3}
  if (isNumber(c[i])) {
    std::size_t m = 0;
    while (m < maxDigits && i + m < n && isNumber(c[i + m])) ++m;
    return m;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  if (std::size_t m = optionalSpaceThenRun(c, i, isOther)) return m + runOf(c, i + m, isLineBreak);
  return lineBreaksThenWhitespace(c, i);
}

// The o200k regex's two letter classes: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (a word's capitals) and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}] (its small letters); letters without case (Lm, Lo) and marks are in both.
bool isUncasedLetter(char32_t c) { return isLetter(c) && !isUpperLetter(c) && !isLowerLetter(c); }
bool isCapitalClass(char32_t c) { return isUpperLetter(c) || isUncasedLetter(c) || isMark(c); }
bool isSmallClass(char32_t c) { return isLowerLetter(c) || isUncasedLetter(c) || isMark(c); }

// gpt-oss's o200k:
//   [^\r\n\p{L}\p{N}]?C*S+(?i:'s|…)?|[^\r\n\p{L}\p{N}]?C+S*(?i:'s|…)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+        (C: isCapitalClass, S: isSmallClass)
// so "HelloWorld" is "Hello" + "World" and "HTTPServer" one piece (C+S*). Each alternative tries
// the optional leading character first, then without it, as the regex engine backtracks.
std::size_t matchO200k(const Cps& c, std::size_t i) {
  const std::size_t n = c.size();
  const bool lead = !isLineBreak(c[i]) && !isLetter(c[i]) && !isNumber(c[i]);
  auto withContraction = [&](std::size_t end) {
    return end < n ? end + contraction(c, end, /*ignoreCase=*/true) : end;
  };
  // C*S+: the greedy C* backs off until a small-class character follows it.
  for (std::size_t p : {1, 0}) {
    if (p == 1 && !lead) continue;
    const std::size_t j = i + p;
    if (j >= n) continue;
    const std::size_t capitals = runOf(c, j, isCapitalClass);
    for (std::size_t k = capitals + 1; k-- > 0;) {
      if (j + k < n && isSmallClass(c[j + k])) return withContraction(j + k + runOf(c, j + k, isSmallClass)) - i;
    }
  }
  // C+S*
  for (std::size_t p : {1, 0}) {
    if (p == 1 && !lead) continue;
    const std::size_t j = i + p;
    if (j >= n) continue;
    const std::size_t capitals = runOf(c, j, isCapitalClass);
    if (capitals > 0) return withContraction(j + capitals + runOf(c, j + capitals, isSmallClass)) - i;
  }
  // \p{N}{1,3}
  if (isNumber(c[i])) {
    std::size_t m = 0;
    while (m < 3 && i + m < n && isNumber(c[i + m])) ++m;
    return m;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n/]*
  if (std::size_t m = optionalSpaceThenRun(c, i, isOther)) {
    return m + runOf(c, i + m, [](char32_t x) { return isLineBreak(x) || x == '/'; });
  }
  return lineBreaksThenWhitespace(c, i);
}

// DeepSeek-V3's three Splits, run one after another on each piece of the one before:
//   \p{N}{1,3}
//   [一-龥぀-ゟ゠-ヿ]+   (CJK ideographs U+4E00-9FA5, hiragana U+3040-309F, katakana U+30A0-30FF)
//   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//   ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// The first two do not match everywhere: what lies between their matches is a piece too.
std::size_t matchDeepSeekDigits(const Cps& c, std::size_t i) {
  std::size_t m = 0;
  while (m < 3 && i + m < c.size() && isNumber(c[i + m])) ++m;
  return m;
}

bool isDeepSeekCjk(char32_t x) { return (x >= 0x4E00 && x <= 0x9FA5) || (x >= 0x3040 && x <= 0x30FF); }
std::size_t matchDeepSeekCjk(const Cps& c, std::size_t i) { return runOf(c, i, isDeepSeekCjk); }

bool isAsciiPunctuation(char32_t x) { return x < 0x80 && x > 0x20 && x != 0x7F && !std::isalnum(static_cast<int>(x)); }
bool isAsciiLetter(char32_t x) { return (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z'); }
bool isLetterOrMark(char32_t x) { return isLetter(x) || isMark(x); }

std::size_t matchDeepSeekWords(const Cps& c, std::size_t i) {
  const std::size_t n = c.size();
  // [!"#…~][A-Za-z]+
  if (isAsciiPunctuation(c[i]) && i + 1 < n && isAsciiLetter(c[i + 1])) return 1 + runOf(c, i + 1, isAsciiLetter);
  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+, with the optional character first
  const bool lead = !isLineBreak(c[i]) && !isLetter(c[i]) && !isPunctuationOrSymbol(c[i]);
  if (lead && i + 1 < n && isLetterOrMark(c[i + 1])) return 1 + runOf(c, i + 1, isLetterOrMark);
  if (std::size_t m = runOf(c, i, isLetterOrMark)) return m;
  //  ?[\p{P}\p{S}]+[\r\n]*
  if (std::size_t m = optionalSpaceThenRun(c, i, isPunctuationOrSymbol)) return m + runOf(c, i + m, isLineBreak);
  // \s*[\r\n]+|\s+(?!\S)|\s+; anything else (a digit) matches nothing here
  return isWhitespace(c[i]) ? lineBreaksThenWhitespace(c, i) : 0;
}

// A regex's Split with behavior "Isolated", as a global scan: each match is a piece, and so is
// each stretch between matches (`match` gives 0 where no match starts).
ByteSpans splitWith(std::string_view text, std::size_t (*match)(const Cps&, std::size_t)) {
  const CodePoints cp = decodeAll(text);
  ByteSpans spans;
  std::size_t i = 0, gap = 0;  // gap: where the unmatched stretch before i began
  while (i < cp.cps.size()) {
    const std::size_t len = match(cp.cps, i);
    if (len == 0) {
      ++i;
      continue;
    }
    if (gap < i) spans.emplace_back(cp.offsets[gap], cp.offsets[i]);
    spans.emplace_back(cp.offsets[i], cp.offsets[i + len]);
    i += len;
    gap = i;
  }
  if (gap < cp.cps.size()) spans.emplace_back(cp.offsets[gap], cp.offsets[cp.cps.size()]);
  return spans;
}

std::size_t matchLlama3(const Cps& c, std::size_t i) { return matchLlama(c, i, 3); }
std::size_t matchQwen2(const Cps& c, std::size_t i) { return matchLlama(c, i, 1); }

}  // namespace

std::string_view splitRegexPattern(SplitRegex regex) {
  switch (regex) {
    case SplitRegex::Gpt2:
      return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
    case SplitRegex::Llama3:
      return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    case SplitRegex::Qwen2:
      return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    case SplitRegex::DeepSeekDigits:
      return R"(\p{N}{1,3})";
    case SplitRegex::DeepSeekCjk:
      return "[\xE4\xB8\x80-\xE9\xBE\xA5\xE3\x81\x80-\xE3\x82\x9F\xE3\x82\xA0-\xE3\x83\xBF]+";  // [一-龥぀-ゟ゠-ヿ]+
    case SplitRegex::DeepSeekWords:
      // The file's \r and \n inside the classes are the characters themselves, not escapes.
      return "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
             " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
    case SplitRegex::O200k:
      return R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  return {};
}

const char* splitRegexName(SplitRegex regex) {
  switch (regex) {
    case SplitRegex::Gpt2: return "GPT-2";
    case SplitRegex::Llama3: return "Llama-3";
    case SplitRegex::Qwen2: return "Qwen2";
    case SplitRegex::O200k: return "o200k";
    case SplitRegex::DeepSeekDigits: return "DeepSeek-V3 digits";
    case SplitRegex::DeepSeekCjk: return "DeepSeek-V3 CJK";
    case SplitRegex::DeepSeekWords: return "DeepSeek-V3 words";
  }
  return "?";
}

ByteSpans splitByRegex(SplitRegex regex, std::string_view text) {
  switch (regex) {
    case SplitRegex::Gpt2: return splitWith(text, matchGpt2);
    case SplitRegex::Llama3: return splitWith(text, matchLlama3);
    case SplitRegex::Qwen2: return splitWith(text, matchQwen2);
    case SplitRegex::O200k: return splitWith(text, matchO200k);
    case SplitRegex::DeepSeekDigits: return splitWith(text, matchDeepSeekDigits);
    case SplitRegex::DeepSeekCjk: return splitWith(text, matchDeepSeekCjk);
    case SplitRegex::DeepSeekWords: return splitWith(text, matchDeepSeekWords);
  }
  return {};
}

ByteSpans splitDigits(std::string_view text, bool individualDigits) {
  const CodePoints cp = decodeAll(text);
  ByteSpans spans;
  const std::size_t n = cp.cps.size();
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i + 1;
    const bool digit = isNumber(cp.cps[i]);
    if (!(digit && individualDigits)) {
      while (j < n && isNumber(cp.cps[j]) == digit) ++j;
    }
    spans.emplace_back(cp.offsets[i], cp.offsets[j]);
    i = j;
  }
  return spans;
}

ByteSpans splitByText(std::string_view text, std::string_view pattern, SplitBehavior behavior) {
  // The text as alternating stretches and occurrences (an occurrence may follow another).
  struct Part {
    std::size_t begin, end;
    bool match;
  };
  std::vector<Part> parts;
  std::size_t pos = 0;
  while (!pattern.empty() && pos < text.size()) {
    const std::size_t at = text.find(pattern, pos);
    if (at == std::string_view::npos) break;
    if (at > pos) parts.push_back({pos, at, false});
    parts.push_back({at, at + pattern.size(), true});
    pos = at + pattern.size();
  }
  if (pos < text.size()) parts.push_back({pos, text.size(), false});

  ByteSpans spans;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const Part& p : parts) {
        if (!p.match) spans.emplace_back(p.begin, p.end);
      }
      break;
    case SplitBehavior::Isolated:
      for (const Part& p : parts) spans.emplace_back(p.begin, p.end);
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool previousMatch = false;
      for (const Part& p : parts) {
        if (p.match && !previousMatch && !spans.empty()) {
          spans.back().second = p.end;
        } else {
          spans.emplace_back(p.begin, p.end);
        }
        previousMatch = p.match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      // The mirror image: walked from the end, an occurrence joins the piece after it.
      bool nextMatch = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->match && !nextMatch && !spans.empty()) {
          spans.back().first = it->begin;
        } else {
          spans.emplace_back(it->begin, it->end);
        }
        nextMatch = it->match;
      }
      std::reverse(spans.begin(), spans.end());
      break;
    }
    case SplitBehavior::Contiguous: {
      bool previousMatch = false;
      for (const Part& p : parts) {
        if (p.match && previousMatch) {
          spans.back().second = p.end;
        } else {
          spans.emplace_back(p.begin, p.end);
        }
        previousMatch = p.match;
      }
      break;
    }
  }
  return spans;
}

}  // namespace mhascope::tokenize
