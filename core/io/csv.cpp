// CSV export of one slice: RFC 4180 fields, locale-independent numbers, atomic file write.
#include "io/csv.hpp"

#include <charconv>
#include <cmath>

#include "io/file_io.hpp"
#include "attention/tokenizer.hpp"  // sanitizeUtf8

namespace mhascope {
namespace {

Status checkLabels(const std::vector<std::string>& labels, int count, const char* what) {
  if (labels.empty() || labels.size() == static_cast<std::size_t>(count)) return Ok{};
  return makeError(std::string("slice has ") + std::to_string(labels.size()) + " " + what + " labels but " +
                   std::to_string(count) + " " + what + "s");
}

std::string labelAt(const std::vector<std::string>& labels, int i) {
  if (labels.empty()) return std::to_string(i);
  return sanitizeUtf8(labels[static_cast<std::size_t>(i)]);
}

}  // namespace

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

Result<std::string> sliceToCsv(const Slice2D& slice) {
  if (slice.rows <= 0 || slice.cols <= 0) {
    return makeError("nothing to export: the slice is " + std::to_string(slice.rows) + " x " +
                     std::to_string(slice.cols));
  }
  if (slice.data == nullptr) return makeError("nothing to export: the slice has no data");
  if (auto st = checkLabels(slice.rowLabels, slice.rows, "row"); !st) return st.error();
  if (auto st = checkLabels(slice.colLabels, slice.cols, "column"); !st) return st.error();

  std::string out;
  out.reserve(static_cast<std::size_t>(slice.rows + 1) * static_cast<std::size_t>(slice.cols + 1) * 10);
  out += csvField(sanitizeUtf8(slice.rowAxis + " \\ " + slice.colAxis));
  for (int c = 0; c < slice.cols; ++c) {
    out += ',';
    out += csvField(labelAt(slice.colLabels, c));
  }
  out += "\r\n";
  for (int r = 0; r < slice.rows; ++r) {
    out += csvField(labelAt(slice.rowLabels, r));
    for (int c = 0; c < slice.cols; ++c) {
      out += ',';
      out += csvNumber(slice.at(r, c));
    }
    out += "\r\n";
  }
  return out;
}

Status exportCsv(const std::string& path, const Slice2D& slice) {
  auto csv = sliceToCsv(slice);
  if (!csv) return makeError("cannot export '" + path + "': " + csv.error().message);
  return writeFileAtomic(path, *csv);
}

}  // namespace mhascope
