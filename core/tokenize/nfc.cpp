// NFC as Unicode's UAX #15 defines it: decompose fully, put each run of non-starters in canonical
// order (stable sort by combining class), then compose every character with the last starter
// when nothing between them blocks it.
#include "tokenize/nfc.hpp"

#include <algorithm>
#include <vector>

#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {
namespace {

// Hangul syllables are composed and decomposed by arithmetic, not by table.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

std::uint8_t combiningClass(char32_t cp) {
  if (cp < 0x300) return 0;
  const CombiningClassRange* end = kCombiningClasses + kCombiningClassesCount;
  const CombiningClassRange* it = std::lower_bound(kCombiningClasses, end, cp,
                                                   [](const CombiningClassRange& r, char32_t c) { return r.hi < c; });
  return (it != end && it->lo <= cp) ? it->ccc : 0;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* end = kDecompositions + kDecompositionsCount;
  const Decomposition* it =
      std::lower_bound(kDecompositions, end, cp, [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it != end && it->cp == cp) {
    out.insert(out.end(), kDecompositionData + it->offset, kDecompositionData + it->offset + it->length);
  } else {
    out.push_back(cp);
  }
}

// The primary composite of (first, second), or 0.
char32_t composePair(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const Composition* end = kCompositions + kCompositionsCount;
  const Composition* it = std::lower_bound(kCompositions, end, std::make_pair(first, second),
                                           [](const Composition& c, const std::pair<char32_t, char32_t>& p) {
                                             return c.first < p.first || (c.first == p.first && c.second < p.second);
                                           });
  return (it != end && it->first == first && it->second == second) ? it->composite : 0;
}

}  // namespace

std::string toNfc(std::string_view text) {
  const CodePoints cp = decodeAll(text);
  if (std::all_of(cp.cps.begin(), cp.cps.end(), [](char32_t c) { return c < 0x300; })) return std::string(text);

  std::vector<char32_t> d;
  d.reserve(cp.cps.size() + 8);
  for (char32_t c : cp.cps) decompose(c, d);
  // Canonical ordering: each run of non-starters sorted by class, keeping equal classes in order.
  for (std::size_t i = 0; i < d.size();) {
    if (combiningClass(d[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < d.size() && combiningClass(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combiningClass(a) < combiningClass(b); });
    i = j;
  }
  // Composition. lastClass is the class of the last character kept; a character reaches the
  // starter unless something kept between them has class 0 or a class >= its own.
  std::vector<char32_t> out;
  out.reserve(d.size());
  std::ptrdiff_t starter = -1;
  int lastClass = 0;
  for (char32_t c : d) {
    const int cls = combiningClass(c);
    if (starter >= 0) {
      const bool adjacent = static_cast<std::size_t>(starter) + 1 == out.size();
      if (adjacent || (lastClass != 0 && lastClass < cls)) {
        if (char32_t composite = composePair(out[static_cast<std::size_t>(starter)], c)) {
          out[static_cast<std::size_t>(starter)] = composite;
          continue;
        }
      }
    }
    if (cls == 0) starter = static_cast<std::ptrdiff_t>(out.size());
    lastClass = cls;
    out.push_back(c);
  }
  std::string result;
  result.reserve(text.size());
  for (char32_t c : out) appendUtf8(result, c);
  return result;
}

}  // namespace mhascope::tokenize
