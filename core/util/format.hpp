// Number formatting and small message helpers shared by the file readers, the exporter and the
// command line, so that a number reads the same wherever it is printed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace mhascope {

// "1,050,624", "-12,345".
std::string withThousands(std::int64_t n);
// Nine significant digits ("%.9g"): enough to tell two floats apart in a message.
std::string formatDouble(double v);
// A file reader's error: "what: detail" (what names the file).
Error fileError(const std::string& what, const std::string& detail);
// The number of elements of `dims`: 0 when a dim is 0; nullopt when a dim is negative or the
// product of the non-zero dims exceeds `limit` (checked on the non-zero dims, so that no partial
// product a caller computes later can overflow either).
std::optional<std::int64_t> checkedElementCount(const std::vector<std::int64_t>& dims,
                                                std::int64_t limit = INT64_MAX);
// A heatmap cell's number, the same on screen and in exported pictures: two decimals for
// weights and small scores, fewer as the magnitude grows so the text keeps to about five
// characters; 1e4 and more in two significant digits; "NaN", "+inf", and "" for -inf (a
// blocked cell says it with colour); never "-0.00".
std::string formatCellValue(float value);
// Text for XML and HTML (an SVG's <title>, an exported page): & < > " written as entities.
std::string escapeMarkup(std::string_view text);
// A message as it may reach a terminal or the window: every control byte but the newline (NUL, ESC,
// CR, TAB …, and DEL) written as \xNN, so a name read from a file can neither cut the line nor
// drive the terminal.
std::string printableMessage(std::string_view message);
// "%g"-like with `significant` digits through std::to_chars; "NaN", "+inf", "-inf"; no "-0".
std::string formatGeneral(double v, int significant);
// `decimals` digits after the point ("%.*f", "%+.*f" with showSign): the one form every sentence
// about a score uses ("0.93", "+0.217").
std::string formatFixed(double v, int decimals, bool showSign = false);

}  // namespace mhascope
