#include "util/format.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace mhascope {

// Built front to back (inserting into the string made GCC 12 warn, falsely, of overlapping copies).
std::string withThousands(std::int64_t n) {
  const std::string digits = std::to_string(n);
  const std::size_t sign = n < 0 ? 1 : 0;
  std::string s = digits.substr(0, sign);
  for (std::size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string formatDouble(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Error fileError(const std::string& what, const std::string& detail) { return makeError(what + ": " + detail); }

std::optional<std::int64_t> checkedElementCount(const std::vector<std::int64_t>& dims, std::int64_t limit) {
  std::int64_t product = 1;
  bool hasZero = false;
  for (const std::int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      hasZero = true;
      continue;
    }
    if (product > limit / d) return std::nullopt;
    product *= d;
  }
  return hasZero ? 0 : product;
}

std::string formatGeneral(double v, int significant) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  if (v == 0) v = 0;  // no "-0"
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, significant);
  return std::string(buf, res.ptr);
}

std::string formatCellValue(float value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+inf" : "";
  const double v = value;
  const double a = std::abs(v);
  if (a >= 1e4) return formatGeneral(v, 2);
  const int decimals = a < 10 ? 2 : a < 100 ? 1 : 0;
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  std::string s(buf, res.ptr);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // "-0.00" → "0.00"
  return s;
}

std::string escapeMarkup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string printableMessage(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string formatFixed(double v, int decimals, bool showSign) {
  char buf[64];
  std::snprintf(buf, sizeof buf, showSign ? "%+.*f" : "%.*f", decimals, v);
  return buf;
}

}  // namespace mhascope
