// NumPy .npy header reading: the preamble, the Python-literal header parser, dtype descriptors, layout checks.
//
// The format: "\x93NUMPY", a major and minor version byte, the header length (2 bytes
// little-endian in 1.0, 4 bytes in 2.0/3.0), then the header — a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and a final
// newline — then the raw array bytes. We never evaluate the header as Python: a small parser
// below accepts only the literal subset NumPy writes.
//
// [SECTION] Helpers: messages
// [SECTION] Header: the Python literal parser
// [SECTION] dtype descriptors
// [SECTION] Header interpretation: descr, fortran_order, shape
// [SECTION] Layout: preamble, header and data size checks

#include "io/npy_internal.hpp"

#include "io/binary_decode.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "util/format.hpp"

namespace mhascope::npy_detail {

using detail::loadUnsigned;

//-----------------------------------------------------------------------------------------------
// [SECTION] Helpers: messages
//-----------------------------------------------------------------------------------------------

constexpr int kMaxNesting = 16;                 // NumPy headers nest 3 deep at most

std::string printable(std::string_view s, std::size_t maxChars) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= maxChars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

namespace {

//-----------------------------------------------------------------------------------------------
// [SECTION] Header: the Python literal parser
//-----------------------------------------------------------------------------------------------

// One Python literal value. Only what NumPy writes: strings, ints, True/False/None, tuples
// and lists (lists appear in structured-dtype descriptors, which we then refuse by name).
struct PyValue {
  enum class Kind { kString, kInt, kBool, kNone, kTuple, kList };
  Kind kind = Kind::kNone;
  std::string text;            // kString: the value; kInt: the digits as written
  std::int64_t integer = 0;    // kInt, meaningful when !intOverflow
  bool intOverflow = false;    // kInt literal beyond int64
  bool boolean = false;        // kBool
  std::vector<PyValue> items;  // kTuple, kList
};

std::string kindName(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kString: return "a string";
    case PyValue::Kind::kInt: return "an integer";
    case PyValue::Kind::kBool: return "a bool";
    case PyValue::Kind::kNone: return "None";
    case PyValue::Kind::kTuple: return "a tuple";
    case PyValue::Kind::kList: return "a list";
  }
  return "a value";
}

// Renders a parsed value back as Python would, for messages.
std::string reprOf(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kString: return "'" + printable(v.text, 40) + "'";
    case PyValue::Kind::kInt: return v.text;
    case PyValue::Kind::kBool: return v.boolean ? "True" : "False";
    case PyValue::Kind::kNone: return "None";
    case PyValue::Kind::kTuple:
    case PyValue::Kind::kList: {
      const bool tuple = v.kind == PyValue::Kind::kTuple;
      std::string s = tuple ? "(" : "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i) s += ", ";
        if (s.size() > 80) {
          s += "...";
          break;
        }
        s += reprOf(v.items[i]);
      }
      if (tuple && v.items.size() == 1) s += ",";
      return s + (tuple ? ")" : "]");
    }
  }
  return "?";
}

using PyDict = std::vector<std::pair<std::string, PyValue>>;

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  // Parses "{key: value, ...}" followed by nothing but whitespace (the padding).
  bool parseDict(PyDict& out) {
    skipSpace();
    if (!consume('{')) return failHere("expected '{' to start the dict");
    for (;;) {
      skipSpace();
      if (consume('}')) break;
      PyValue key;
      if (!parseValue(key, 1)) return false;
      if (key.kind != PyValue::Kind::kString) {
        return failHere("dict keys must be strings, got " + kindName(key) + " " + reprOf(key));
      }
      skipSpace();
      if (!consume(':')) return failHere("expected ':' after key '" + printable(key.text, 40) + "'");
      PyValue value;
      if (!parseValue(value, 1)) return false;
      out.emplace_back(std::move(key.text), std::move(value));
      skipSpace();
      if (consume('}')) break;
      if (!consume(',')) return failHere("expected ',' or '}' after a dict value");
    }
    skipSpace();
    if (pos_ != text_.size()) return failHere("unexpected text after the closing '}'");
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  static bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
  static bool isDigit(char c) { return c >= '0' && c <= '9'; }
  static bool isIdentChar(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }

  void skipSpace() {
    while (pos_ < text_.size() && isSpace(text_[pos_])) ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool failHere(const std::string& msg) {
    if (pos_ >= text_.size()) {
      error_ = msg + " at the end of the header";
    } else {
      error_ =
          msg + " at header byte " + std::to_string(pos_) + " ('" + printable(text_.substr(pos_, 12)) + "')";
    }
    return false;
  }

  bool parseValue(PyValue& v, int depth) {
    if (depth > kMaxNesting)
      return failHere("values nested more than " + std::to_string(kMaxNesting) + " deep");
    skipSpace();
    if (pos_ >= text_.size()) return failHere("expected a value");
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return parseString(v);
    if (isDigit(c) || c == '-' || c == '+') return parseInt(v);
    if (c == '(') return parseSequence(v, PyValue::Kind::kTuple, ')', depth);
    if (c == '[') return parseSequence(v, PyValue::Kind::kList, ']', depth);
    if (isIdentChar(c)) {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      if (word == "True" || word == "False") {
        v.kind = PyValue::Kind::kBool;
        v.boolean = word == "True";
        return true;
      }
      if (word == "None") {
        v.kind = PyValue::Kind::kNone;
        return true;
      }
      pos_ = start;
      return failHere("unknown name '" + printable(word, 40) + "' (only literals are allowed)");
    }
    return failHere("unexpected character");
  }

  bool parseString(PyValue& v) {
    const char quote = text_[pos_++];
    v.kind = PyValue::Kind::kString;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == quote) return true;
      if (c == '\n') break;
      if (c == '\\') {
        // NumPy never writes escapes; keep the escaped character so quotes cannot end early.
        if (pos_ >= text_.size()) break;
        v.text += text_[pos_++];
        continue;
      }
      v.text += c;
    }
    return failHere("unterminated string");
  }

  bool parseInt(PyValue& v) {
    const std::size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') negative = text_[pos_++] == '-';
    skipSpace();  // Python accepts "- 3"
    if (pos_ >= text_.size() || !isDigit(text_[pos_])) return failHere("expected digits");
    v.kind = PyValue::Kind::kInt;
    // Accumulate as a negative number so INT64_MIN fits; the caller rejects negatives anyway.
    std::int64_t acc = 0;
    while (pos_ < text_.size() && isDigit(text_[pos_])) {
      const int digit = text_[pos_++] - '0';
      if (acc < (std::numeric_limits<std::int64_t>::min() + digit) / 10) v.intOverflow = true;
      if (!v.intOverflow) acc = acc * 10 - digit;
    }
    // Headers written by NumPy under Python 2 may carry a long suffix: (3L, 4L).
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
    if (pos_ < text_.size() && (isIdentChar(text_[pos_]) || text_[pos_] == '.')) {
      return failHere("not an integer literal");
    }
    if (!negative) {
      if (acc == std::numeric_limits<std::int64_t>::min()) v.intOverflow = true;
      acc = v.intOverflow ? 0 : -acc;
    }
    v.integer = acc;
    for (std::size_t i = start; i < pos_; ++i) {
      if (!isSpace(text_[i])) v.text += text_[i];
    }
    return true;
  }

  bool parseSequence(PyValue& v, PyValue::Kind kind, char close, int depth) {
    ++pos_;  // the opening bracket
    bool sawComma = false;
    for (;;) {
      skipSpace();
      if (consume(close)) break;
      PyValue item;
      if (!parseValue(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      skipSpace();
      if (consume(close)) break;
      if (!consume(',')) return failHere(std::string("expected ',' or '") + close + "'");
      sawComma = true;
    }
    if (kind == PyValue::Kind::kTuple && v.items.size() == 1 && !sawComma) {
      // "(5)" is just 5 in parentheses in Python, not a 1-tuple.
      PyValue inner = std::move(v.items.front());
      v = std::move(inner);
      return true;
    }
    v.kind = kind;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
};

//-----------------------------------------------------------------------------------------------
// [SECTION] dtype descriptors
//-----------------------------------------------------------------------------------------------

// Parses descriptors like '<f4', '>i8', '|b1'. Everything NumPy can store but mhascope cannot
// use gets a message saying what it is, so the user knows what to convert.
Result<NpyDtype> parseDescr(const std::string& descr, const std::string& what) {
  // Built by appending: GCC 12's -Wrestrict misfires on "'" + std::string&&.
  std::string shown = "'";
  shown += printable(descr, 40);
  shown += '\'';
  std::string_view rest = descr;
  bool bigEndian = kHostBigEndian;
  if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '|' || rest[0] == '=')) {
    // '|' means "byte order not applicable" and '=' means native; NumPy reads both as native.
    if (rest[0] == '<') bigEndian = false;
    if (rest[0] == '>') bigEndian = true;
    rest.remove_prefix(1);
  }
  if (rest.empty()) return fileError(what, "unknown dtype " + shown);
  const char code = rest[0];
  const std::string_view digits = rest.substr(1);
  auto unsupported = [&](const std::string& why) {
    return fileError(what, "unsupported dtype " + shown + ": " + why +
                          "; mhascope reads float (f2/f4/f8), integer and bool arrays");
  };
  switch (code) {
    case 'O': return unsupported("object arrays hold pickled Python objects, never loaded");
    case 'U':
    case 'S':
    case 'a': return unsupported("string arrays are not numbers");
    case 'c': return unsupported("complex numbers are not supported");
    case 'V': return unsupported("raw or structured (void) records are not supported");
    case 'M':
    case 'm': return unsupported("datetime/timedelta arrays are not supported");
    default: break;
  }
  std::size_t size = 0;
  if (digits.empty() || digits.size() > 3) return fileError(what, "unknown dtype " + shown);
  for (const char c : digits) {
    if (c < '0' || c > '9') return fileError(what, "unknown dtype " + shown);
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  NpyDtype dt;
  dt.size = size;
  dt.bigEndian = bigEndian;
  switch (code) {
    case 'f':
      if (size != 2 && size != 4 && size != 8) {
        return unsupported(std::to_string(size * 8) + "-bit floats are not supported");
      }
      dt.kind = NpyDtype::Kind::kFloat;
      return dt;
    case 'i':
    case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) return fileError(what, "unknown dtype " + shown);
      dt.kind = code == 'i' ? NpyDtype::Kind::kSigned : NpyDtype::Kind::kUnsigned;
      return dt;
    case 'b':
      if (size != 1) return fileError(what, "unknown dtype " + shown);
      dt.kind = NpyDtype::Kind::kBool;
      return dt;
    default: return fileError(what, "unknown dtype " + shown);
  }
}

//-----------------------------------------------------------------------------------------------
// [SECTION] Header interpretation: descr, fortran_order, shape
//-----------------------------------------------------------------------------------------------

Result<NpyHeader> interpretHeader(std::string_view headerText, const std::string& what) {
  PyDict dict;
  LiteralParser parser(headerText);
  if (!parser.parseDict(dict)) {
    return fileError(what, "header is not a Python dict literal: " + parser.error() + "; header: \"" +
                          printable(headerText, 120) + "\"");
  }
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [key, value] : dict) {
    const PyValue** slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (!slot) {
      return fileError(what, "header has an unexpected key '" + printable(key, 40) +
                            "' (a .npy header holds exactly descr, fortran_order and shape)");
    }
    if (*slot) return fileError(what, "header has the key '" + key + "' twice");
    *slot = &value;
  }
  for (const auto& [name, slot] :
       {std::pair{"descr", descr}, std::pair{"fortran_order", fortran}, std::pair{"shape", shape}}) {
    if (!slot)
      return fileError(what,
                  std::string("header has no '") + name + "' key: \"" + printable(headerText, 120) + "\"");
  }

  NpyHeader h;
  if (descr->kind == PyValue::Kind::kList) {
    return fileError(what, "unsupported dtype " + reprOf(*descr) +
                          ": structured arrays (records with named fields) are not supported; "
                          "save each field as its own plain numeric array");
  }
  if (descr->kind != PyValue::Kind::kString) {
    return fileError(what,
                "descr must be a dtype string like '<f4', got " + kindName(*descr) + " " + reprOf(*descr));
  }
  auto dtype = parseDescr(descr->text, what);
  if (!dtype) return dtype.error();
  h.dtype = *dtype;
  h.descr = descr->text;

  if (shape->kind != PyValue::Kind::kTuple) {
    return fileError(
        what, "shape must be a tuple of integers like (2, 3), got " + kindName(*shape) + " " + reprOf(*shape));
  }
  const std::string shapeText = reprOf(*shape);
  for (const PyValue& d : shape->items) {
    if (d.kind != PyValue::Kind::kInt) {
      return fileError(what,
                  "shape " + shapeText + " must hold only integers, got " + kindName(d) + " " + reprOf(d));
    }
    if (d.intOverflow)
      return fileError(what, "shape " + shapeText + " has a dimension " + d.text + " that does not fit in 64 bits");
    if (d.integer < 0) return fileError(what, "shape " + shapeText + " has a negative dimension " + d.text);
    h.shape.push_back(d.integer);
  }
  const auto numel = checkedElementCount(h.shape);  // the dims are >= 0 here
  if (!numel) {
    return fileError(what, "shape " + shapeText + " has more elements than fit in a 64-bit count (product overflows)");
  }
  h.numel = *numel;

  if (fortran->kind != PyValue::Kind::kBool) {
    return fileError(what,
                "fortran_order must be True or False, got " + kindName(*fortran) + " " + reprOf(*fortran));
  }
  // A 0-d or 1-d array has the same bytes in either order, so only refuse where it matters.
  if (fortran->boolean && h.shape.size() >= 2) {
    return fileError(what, "Fortran-order arrays are not supported; save with np.ascontiguousarray (shape " +
                          shapeText + ")");
  }
  return h;
}
}  // namespace

//-----------------------------------------------------------------------------------------------
// [SECTION] Layout: preamble, header and data size checks
//-----------------------------------------------------------------------------------------------

Result<NpyLayout> checkLayout(std::string_view bytes, std::uint64_t totalSize, const std::string& what) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return fileError(what, "not a .npy file: it does not start with the magic bytes \\x93NUMPY (starts with \"" +
                          printable(bytes.substr(0, 8)) + "\", " + std::to_string(totalSize) +
                          " bytes in all)");
  }
  if (totalSize < kPreambleV1) {
    return fileError(what, "file is only " + std::to_string(totalSize) + " bytes, too short for a .npy preamble");
  }
  const auto major = static_cast<unsigned char>(bytes[6]);
  const auto minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return fileError(what, "unknown .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                          " (supported: 1.0, 2.0, 3.0)");
  }
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t preamble = kPreambleV1;
  std::uint64_t headerLen = 0;
  if (major == 1) {
    headerLen = loadUnsigned<std::uint16_t>(raw + 8, false);
  } else {
    preamble = kPreambleV2;
    if (totalSize < preamble) {
      return fileError(what, "file is only " + std::to_string(totalSize) + " bytes, too short for a version " +
                            std::to_string(major) + ".0 preamble");
    }
    headerLen = loadUnsigned<std::uint32_t>(raw + 8, false);
  }
  const std::uint64_t afterPreamble = totalSize - preamble;
  if (headerLen > afterPreamble) {
    return fileError(what, "header length " + std::to_string(headerLen) + " is larger than the file (" +
                          std::to_string(afterPreamble) + " bytes after the " + std::to_string(preamble) +
                          "-byte preamble); the file is truncated or corrupt");
  }
  if (headerLen > kMaxHeaderBytes) {
    return fileError(what, "header length " + std::to_string(headerLen) + " is larger than the limit of " +
                          std::to_string(kMaxHeaderBytes) + " bytes (NumPy's own safety limit)");
  }
  if (bytes.size() < preamble + headerLen) return fileError(what, "the header could not be read whole");
  const std::string_view headerText = bytes.substr(preamble, static_cast<std::size_t>(headerLen));
  auto header = interpretHeader(headerText, what);
  if (!header) return header.error();

  const std::size_t dataStart = preamble + static_cast<std::size_t>(headerLen);
  const std::uint64_t dataBytes = totalSize - dataStart;
  const std::size_t itemSize = header->dtype.size;
  const auto numel = static_cast<std::uint64_t>(header->numel);
  const std::string declared =
      "shape " + shapeToString(header->shape) + " of '" + printable(header->descr, 40) + "'";
  // Compare without computing numel * itemSize when that product cannot be held.
  if (numel > dataBytes / itemSize) {
    const bool overflow = numel > std::numeric_limits<std::uint64_t>::max() / itemSize;
    return fileError(what, "data is shorter than the header declares: " + declared + " needs " +
                          (overflow ? std::string("more than 2^64") : std::to_string(numel * itemSize)) +
                          " bytes but the file holds " + std::to_string(dataBytes) + " bytes after the header");
  }
  const std::uint64_t needed = numel * itemSize;
  if (dataBytes != needed) {
    return fileError(what, "data is longer than the header declares: " + declared + " needs " +
                          std::to_string(needed) + " bytes but the file holds " + std::to_string(dataBytes) +
                          " bytes after the header (" + std::to_string(dataBytes - needed) + " extra)");
  }

  return NpyLayout{std::move(*header), dataStart};
}

}  // namespace mhascope::npy_detail
