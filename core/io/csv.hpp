// The pieces of a CSV file (the training log, the Train mode's curves): RFC 4180 quoting, numbers
// always with '.' whatever the locale, and non-finite values written out ("nan", "inf", "-inf"),
// never blanked.
#pragma once

#include <string>
#include <string_view>


namespace mhascope {

// A field quoted only when it must be: it contains ',', '"', CR or LF (inner quotes doubled).
std::string csvField(std::string_view text);

// Shortest text that reads back to the same float (std::to_chars: locale-independent);
// "nan" for every NaN, "inf" / "-inf".
std::string csvNumber(float v);

}  // namespace mhascope
