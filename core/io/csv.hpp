// CSV export of one 2-D slice (e.g. the weights of one head): a header row with the column
// labels, then one row per row label. RFC 4180 quoting, CRLF line ends, numbers always with '.'
// whatever the locale, and non-finite values written out ("nan", "inf", "-inf"), never blanked.
#pragma once

#include <string>
#include <string_view>

#include "util/result.hpp"
#include "attention/trace.hpp"  // Slice2D

namespace mhascope {

// A field quoted only when it must be: it contains ',', '"', CR or LF (inner quotes doubled).
std::string csvField(std::string_view text);

// Shortest text that reads back to the same float (std::to_chars: locale-independent);
// "nan" for every NaN, "inf" / "-inf".
std::string csvNumber(float v);

// The whole table. The top-left cell names both axes ("T_q \ T_k"); missing labels become
// indices; labels are made valid UTF-8 first. Errors: empty slice, no data, or a label count
// that differs from the rows/cols (names both numbers).
Result<std::string> sliceToCsv(const Slice2D& slice);

// sliceToCsv, then writeFileAtomic: on any error nothing is written and an old file stays.
Status exportCsv(const std::string& path, const Slice2D& slice);

}  // namespace mhascope
