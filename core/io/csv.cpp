// CSV fields and numbers (csv.hpp).
#include "io/csv.hpp"

#include <charconv>
#include <cmath>


namespace mhascope {
std::string csvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';  // RFC 4180: a quote inside a quoted field is doubled
    out += c;
  }
  out += '"';
  return out;
}

std::string csvNumber(float v) {
  // Explicit, because to_chars would write a negative NaN as "-nan".
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // to_chars never consults the locale (printf would write "0,5" under de_DE) and its shortest
  // form reads back to the identical float.
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

}  // namespace mhascope
