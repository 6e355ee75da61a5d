// Tests for the .npy reader and writer (core/io/npy.cpp): round trips, files NumPy itself
// wrote (tests/fixtures/npy), hand-crafted big-endian and f8 files, and one test per malformed
// malformed input, each checking that the message names the problem and values.

#include "io/npy.hpp"

#include <gtest/gtest.h>

#include "check_tensor.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "io/file_io.hpp"

// Its own namespace: the unity build batches the tests of a target, and .npy's and .safetensors'
// tests name their helpers alike.
namespace mhascope::npy_test {
namespace {

// The hand-made byte strings below are built from host values.
static_assert(std::endian::native == std::endian::little,
              "these tests build little-endian bytes from host values");

const std::string kWhat = "--query q.npy";

// Passes when `r` is an error whose message names `what` (default kWhat) and contains every word.
template <class T>
::testing::AssertionResult failsWith(const Result<T>& r, std::initializer_list<std::string_view> words,
                                   const std::string& what = kWhat) {
  return mhascope::testing::errorNaming(r, what, words);
}

// A .npy file around `dict`, padded the way NumPy pads (64-byte aligned, final newline).
std::string npyFile(const std::string& dict, std::string_view data, int major = 1) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t lenBytes = major == 1 ? 2 : 4;
  std::string header = dict;
  const std::size_t total = out.size() + lenBytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  for (std::size_t k = 0; k < lenBytes; ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
  return out + header + std::string(data);
}

std::string dictFor(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// The bytes of `values` as type T, in either byte order.
template <class T>
std::string bytesOf(std::initializer_list<T> values, bool bigEndian = false) {
  std::string out;
  for (const T v : values) {
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    if (bigEndian) std::reverse(buf, buf + sizeof(T));
    out.append(buf, sizeof(T));
  }
  return out;
}

// The non-symmetric matrix every round trip uses: a transpose would move -1.25 and 3.
const std::vector<float> kMatrix = {0.5f, -1.25f, 2.0f, 3.0f, 4.5f, -6.0f};  // (2, 3)

void expectMatrix(const Tensor& t) {
  ASSERT_EQ(t.shape, (Shape{2, 3}));
  EXPECT_EQ(std::vector<float>(t.data.begin(), t.data.end()), kMatrix);
  EXPECT_TRUE(t.axes.empty());
  // Row-major: element (0, 1) is the second value, (1, 0) the fourth.
  EXPECT_EQ(t.data[0 * 3 + 1], -1.25f);
  EXPECT_EQ(t.data[1 * 3 + 0], 3.0f);
}

Result<std::string> fixture(const std::string& name) {
  return readFile(std::string(MHASCOPE_FIXTURES_DIR) + "/npy/" + name);
}

// ----- round trips and well-formed files -------------------------------------------------------

TEST(NpyTest, RoundTripNonSymmetricMatrix) {
  Tensor t;
  t.shape = {2, 3};
  t.data.assign(kMatrix.begin(), kMatrix.end());
  auto back = parseNpy(encodeNpy(t), kWhat);
  ASSERT_TRUE(back.ok()) << back.error().message;
  expectMatrix(*back);
}

TEST(NpyTest, RoundTripShapes) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 1, 3}, Shape{0, 3}, Shape{1, 2, 2, 2}}) {
    Tensor t;
    t.shape = shape;
    t.data.resize(static_cast<std::size_t>(Tensor::numelOf(shape)));
    for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(i) * 0.5f - 1.0f;
    const std::string bytes = encodeNpy(t);
    EXPECT_EQ((bytes.size() - t.data.size() * 4) % 64, 0u) << "header not 64-byte aligned";
    auto back = parseNpy(bytes, kWhat);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->shape, shape);
    EXPECT_EQ(back->data, t.data);
  }
}

TEST(NpyTest, EncodeMatchesNumpyByteForByte) {
  auto bytes = fixture("f4_2x3.npy");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  auto t = parseNpy(*bytes, kWhat);
  ASSERT_TRUE(t.ok()) << t.error().message;
  expectMatrix(*t);
  EXPECT_EQ(encodeNpy(*t), *bytes);
}

TEST(NpyTest, ReadsFilesNumpyWrote) {
  for (const char* name : {"f4_2x3.npy", "f8_be_2x3.npy", "f4_2x3_v2.npy"}) {
    SCOPED_TRACE(name);
    auto bytes = fixture(name);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    auto t = parseNpy(*bytes, name);
    ASSERT_TRUE(t.ok()) << t.error().message;
    expectMatrix(*t);
  }
  auto mask = loadNpy(std::string(MHASCOPE_FIXTURES_DIR) + "/npy/b1_mask_2x3.npy");
  ASSERT_TRUE(mask.ok()) << mask.error().message;
  EXPECT_EQ(mask->shape, (Shape{2, 3}));
  EXPECT_EQ(mask->data, (FloatBuffer{1, 0, 1, 0, 0, 1}));
  auto ints = loadNpy(std::string(MHASCOPE_FIXTURES_DIR) + "/npy/i8_1d.npy");
  ASSERT_TRUE(ints.ok()) << ints.error().message;
  EXPECT_EQ(ints->shape, (Shape{4}));
  EXPECT_EQ(ints->data, (FloatBuffer{-3, 0, 7, 1099511627776.0f}));
  auto scalar = loadNpy(std::string(MHASCOPE_FIXTURES_DIR) + "/npy/f4_0d.npy");
  ASSERT_TRUE(scalar.ok()) << scalar.error().message;
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->data, (FloatBuffer{3.5f}));
}

TEST(NpyTest, RefusesFilesNumpyWroteThatMhascopeCannotUse) {
  const std::string dir = std::string(MHASCOPE_FIXTURES_DIR) + "/npy/";
  EXPECT_TRUE(failsWith(loadNpy(dir + "fortran_2x3.npy"), {"Fortran-order", "np.ascontiguousarray"},
                        dir + "fortran_2x3.npy"));
  EXPECT_TRUE(
      failsWith(loadNpy(dir + "object.npy"), {"unsupported dtype", "'|O'", "object"}, dir + "object.npy"));
  EXPECT_TRUE(
      failsWith(loadNpy(dir + "structured.npy"), {"unsupported dtype", "structured"}, dir + "structured.npy"));
  EXPECT_TRUE(failsWith(loadNpy(dir + "nan_inf.npy"), {"2 NaN and 2 Inf", "never silently zeroe"},
                        dir + "nan_inf.npy"));
}

TEST(NpyTest, HandCraftedBigEndianFloat32) {
  const std::string data = bytesOf<float>({0.5f, -1.25f, 2.0f, 3.0f, 4.5f, -6.0f}, /*bigEndian=*/true);
  auto t = parseNpy(npyFile(dictFor(">f4", "(2, 3)"), data), kWhat);
  ASSERT_TRUE(t.ok()) << t.error().message;
  expectMatrix(*t);
}

TEST(NpyTest, HandCraftedFloat64BothByteOrders) {
  for (const bool big : {false, true}) {
    const std::string data = bytesOf<double>({0.5, -1.25, 2.0, 3.0, 4.5, -6.0}, big);
    auto t = parseNpy(npyFile(dictFor(big ? ">f8" : "<f8", "(2, 3)"), data), kWhat);
    ASSERT_TRUE(t.ok()) << t.error().message;
    expectMatrix(*t);
  }
  // f8 values that are not exact in float are rounded, not refused.
  auto t = parseNpy(npyFile(dictFor("<f8", "(2,)"), bytesOf<double>({0.1, 1e-50})), kWhat);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->data, (FloatBuffer{0.1f, 0.0f}));
}

TEST(NpyTest, HalfFloats) {
  // 1.0, -2.0, 65504 (max half), 2^-24 (smallest subnormal), -0.0
  const std::string data = bytesOf<std::uint16_t>({0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000});
  auto t = parseNpy(npyFile(dictFor("<f2", "(5,)"), data), kWhat);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->data, (FloatBuffer{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24), -0.0f}));
  EXPECT_TRUE(std::signbit(t->data[4]));
}

TEST(NpyTest, IntegerAndBoolDtypesBecomeFloats) {
  struct Case {
    std::string descr;
    std::string data;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {"|b1", std::string("\x00\x01\x02", 3), {0, 1, 1}},
      {"|u1", std::string("\x00\x7f\xff", 3), {0, 127, 255}},
      {"|i1", std::string("\x00\x7f\xff", 3), {0, 127, -1}},
      {"<i2", bytesOf<std::int16_t>({-2, 300, -32768}), {-2, 300, -32768}},
      {">i2", bytesOf<std::int16_t>({-2, 300, -32768}, true), {-2, 300, -32768}},
      {"<u2", bytesOf<std::uint16_t>({0, 1, 65535}), {0, 1, 65535}},
      {">u2", bytesOf<std::uint16_t>({0, 1, 65535}, true), {0, 1, 65535}},
      {"<i4", bytesOf<std::int32_t>({-7, 0, 1 << 20}), {-7, 0, 1 << 20}},
      {">i4", bytesOf<std::int32_t>({-7, 0, 1 << 20}, true), {-7, 0, 1 << 20}},
      {"<u4", bytesOf<std::uint32_t>({0, 1, 4000000000u}), {0, 1, 4e9f}},
      {">u4", bytesOf<std::uint32_t>({0, 1, 4000000000u}, true), {0, 1, 4e9f}},
      {"<i8", bytesOf<std::int64_t>({-1, 0, 1}), {-1, 0, 1}},
      {">i8", bytesOf<std::int64_t>({-1, 0, 1}, true), {-1, 0, 1}},
      {"<u8", bytesOf<std::uint64_t>({0, 1, 1ull << 40}), {0, 1, 1099511627776.0f}},
      {">u8", bytesOf<std::uint64_t>({0, 1, 1ull << 40}, true), {0, 1, 1099511627776.0f}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.descr);
    auto t = parseNpy(npyFile(dictFor(c.descr, "(3,)"), c.data), kWhat);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(std::vector<float>(t->data.begin(), t->data.end()), c.expected);
  }
}

TEST(NpyTest, HeaderSpellingsNumpyOrPythonMayUse) {
  const std::string data = bytesOf<float>({1, 2, 3, 4, 5});
  for (const std::string dict : {
           std::string(
               "{'shape': (5,), 'fortran_order': False, 'descr': '<f4'}"),  // any key order, no trailing comma
           std::string("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (5,)}"),  // double quotes
           std::string("{ 'descr' : '<f4' ,\t'fortran_order':False,'shape':( 5 , ) , }"),   // spacing
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (5L,), }"),       // Python 2 long
           std::string(
               "{'descr': '<f4', 'fortran_order': True, 'shape': (5,), }"),  // 1-d: same bytes in F order
       }) {
    SCOPED_TRACE(dict);
    auto t = parseNpy(npyFile(dict, data), kWhat);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->shape, (Shape{5}));
    EXPECT_EQ(t->data, (FloatBuffer{1, 2, 3, 4, 5}));
  }
  auto v3 = parseNpy(npyFile(dictFor("<f4", "(5,)"), data, 3), kWhat);
  ASSERT_TRUE(v3.ok()) << v3.error().message;
}

TEST(NpyTest, SaveAndLoadThroughFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mhascope_npy_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.npy").string();
  Tensor t;
  t.shape = {2, 3};
  t.data.assign(kMatrix.begin(), kMatrix.end());
  ASSERT_TRUE(saveNpy(path, t).ok());
  auto back = loadNpy(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  expectMatrix(*back);
  std::filesystem::remove_all(dir);
}

// ----- malformed files: one test per case --------------------------------------------------------

TEST(NpyTest, BadMagic) {
  EXPECT_TRUE(failsWith(parseNpy("PK\x03\x04 this is a zip", kWhat), {"magic", "\\x93NUMPY"}));
  EXPECT_TRUE(failsWith(parseNpy("", kWhat), {"magic", "0 bytes"}));
  std::string wrong = npyFile(dictFor("<f4", "(1,)"), bytesOf<float>({1}));
  wrong[1] = 'M';
  EXPECT_TRUE(failsWith(parseNpy(wrong, kWhat), {"magic"}));
}

TEST(NpyTest, TooShortForPreamble) {
  EXPECT_TRUE(failsWith(parseNpy(std::string("\x93NUMPY\x01\x00", 8), kWhat), {"8 bytes", "too short"}));
  EXPECT_TRUE(failsWith(parseNpy(std::string("\x93NUMPY\x02\x00\x10\x00", 10), kWhat), {"too short", "2.0"}));
}

TEST(NpyTest, UnknownVersion) {
  std::string file = npyFile(dictFor("<f4", "(1,)"), bytesOf<float>({1}));
  file[6] = 4;
  EXPECT_TRUE(failsWith(parseNpy(file, kWhat), {"version 4.0", "1.0, 2.0, 3.0"}));
  file[6] = 1;
  file[7] = 1;
  EXPECT_TRUE(failsWith(parseNpy(file, kWhat), {"version 1.1"}));
}

TEST(NpyTest, HeaderLengthLargerThanFile) {
  std::string file = npyFile(dictFor("<f4", "(1,)"), "");
  file.resize(40);  // the header is cut off
  EXPECT_TRUE(failsWith(parseNpy(file, kWhat), {"header length 118", "larger than the file", "30 bytes"}));
}

TEST(NpyTest, HeaderLengthOverTenThousand) {
  std::string dict = dictFor("<f4", "(1,)");
  dict.append(20000, ' ');  // legal padding, but more than NumPy's safety limit
  const std::string file = npyFile(dict, bytesOf<float>({1}), 2);
  EXPECT_TRUE(failsWith(parseNpy(file, kWhat), {"header length 20", "limit of 10000"}));
}

TEST(NpyTest, HeaderNotADict) {
  EXPECT_TRUE(failsWith(parseNpy(npyFile("['<f4', False, (1,)]", bytesOf<float>({1})), kWhat),
                        {"not a Python dict literal", "expected '{'"}));
  EXPECT_TRUE(failsWith(
      parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", bytesOf<float>({1})), kWhat),
      {"not a Python dict literal", "expected ',' or '}'"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile("{'descr: '<f4'}", ""), kWhat), {"not a Python dict literal"}));
  EXPECT_TRUE(failsWith(
      parseNpy(npyFile("{'descr': __import__('os'), 'fortran_order': False, 'shape': (1,)}", ""), kWhat),
      {"not a Python dict literal", "unknown name '__import__'"}));
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", ""), kWhat),
                {"not a Python dict literal", "after the closing"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile("{1: '<f4'}", ""), kWhat), {"keys must be strings"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile("{'shape': (2.5,)}", ""), kWhat), {"not an integer literal"}));
  // Deep nesting is refused, not recursed into.
  EXPECT_TRUE(failsWith(parseNpy(npyFile("{'descr': " + std::string(200, '(') + "}", ""), kWhat),
                        {"nested more than"}));
}

TEST(NpyTest, MissingExtraOrDuplicateKeys) {
  const std::string data = bytesOf<float>({1});
  EXPECT_TRUE(failsWith(parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False}", data), kWhat),
                        {"no 'shape' key"}));
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile("{'shape': (1,), 'fortran_order': False}", data), kWhat), {"no 'descr' key"}));
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile("{'shape': (1,), 'descr': '<f4'}", data), kWhat), {"no 'fortran_order' key"}));
  EXPECT_TRUE(failsWith(
      parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", data), kWhat),
      {"unexpected key 'extra'"}));
  EXPECT_TRUE(failsWith(
      parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,)}", data), kWhat),
      {"'shape' twice"}));
}

TEST(NpyTest, UnsupportedDtypes) {
  const std::string data(16, '\0');
  struct Case {
    std::string descr;
    std::string_view word;
  };
  for (const Case& c : {Case{"|O", "object"}, Case{"<U4", "string"}, Case{"|S4", "string"},
                        Case{"<c8", "complex"}, Case{"<c16", "complex"}, Case{"<M8[ns]", "datetime"},
                        Case{"|V16", "void"}, Case{"<f16", "128-bit floats"}}) {
    SCOPED_TRACE(c.descr);
    EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor(c.descr, "(1,)"), data), kWhat),
                          {"unsupported dtype", "'" + c.descr + "'", c.word}));
  }
  EXPECT_TRUE(failsWith(
      parseNpy(
          npyFile("{'descr': [('x', '<f4'), ('y', '<i4')], 'fortran_order': False, 'shape': (2,), }", data),
          kWhat),
      {"unsupported dtype", "structured", "('x', '<f4')"}));
  for (const std::string descr : {"<q4", "<i3", "|b2", "", "<", "<f"}) {
    SCOPED_TRACE(descr);
    EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor(descr, "(1,)"), data), kWhat), {"unknown dtype"}));
  }
  EXPECT_TRUE(failsWith(parseNpy(npyFile("{'descr': 4, 'fortran_order': False, 'shape': (1,), }", data), kWhat),
                        {"descr must be a dtype string"}));
}

TEST(NpyTest, FortranOrder) {
  const std::string data = bytesOf<float>({0.5f, 3.0f, -1.25f, 4.5f, 2.0f, -6.0f});
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(2, 3)", "True"), data), kWhat),
                        {"Fortran-order arrays are not supported; save with np.ascontiguousarray", "(2, 3)"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(2, 3)", "0"), data), kWhat),
                        {"fortran_order must be True or False", "0"}));
}

TEST(NpyTest, ShapeNotATupleOfInts) {
  const std::string data = bytesOf<float>({1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f4", "[2, 3]"), data), kWhat), {"shape must be a tuple", "[2, 3]"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(6)"), data), kWhat),
                        {"shape must be a tuple", "an integer"}));
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f4", "(2, '3')"), data), kWhat), {"must hold only integers"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(True, 6)"), data), kWhat),
                        {"must hold only integers", "bool"}));
}

TEST(NpyTest, NegativeDimension) {
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f4", "(2, -3)"), ""), kWhat), {"negative dimension -3", "(2, -3)"}));
}

TEST(NpyTest, ShapeProductOverflow) {
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(4294967296, 4294967296)"), ""), kWhat),
                        {"(4294967296, 4294967296)", "overflow"}));
  // Refused even with a zero dim: later code multiplying the other dims must not overflow.
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f4", "(0, 4294967296, 4294967296)"), ""), kWhat), {"overflow"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(99999999999999999999,)"), ""), kWhat),
                        {"99999999999999999999", "does not fit in 64 bits"}));
}

TEST(NpyTest, HugeShapeWithTinyDataAllocatesNothing) {
  // 2^62 elements of 8 bytes: more bytes than 2^64; must be refused before any allocation.
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f8", "(2305843009213693952, 2)"), bytesOf<double>({1})), kWhat),
                {"shorter", "more than 2^64", "holds 8 bytes"}));
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(100000000, 100000000)"), bytesOf<float>({1})), kWhat),
                        {"shorter", "needs 40000000000000000 bytes", "holds 4 bytes"}));
}

TEST(NpyTest, DataShorterThanDeclared) {
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f4", "(2, 3)"), bytesOf<float>({1, 2, 3, 4, 5})), kWhat),
                        {"shorter", "(2, 3)", "'<f4'", "needs 24 bytes", "holds 20 bytes"}));
}

TEST(NpyTest, DataLongerThanDeclared) {
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f4", "(2, 3)"), bytesOf<float>({1, 2, 3, 4, 5, 6, 7})), kWhat),
                {"longer", "needs 24 bytes", "holds 28 bytes", "4 extra"}));
}

TEST(NpyTest, NanAndInfAreErrorsWithCounts) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f4", "(2, 3)"), bytesOf<float>({1, nan, 3, inf, nan, -inf})), kWhat),
                {"2 NaN and 2 Inf", "of 6", "flat index 1", "never silently zeroed"}));
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor(">f8", "(2,)"), bytesOf<double>({1.0, std::nan("")}, true)), kWhat),
                {"1 NaN and 0 Inf"}));
  EXPECT_TRUE(
      failsWith(parseNpy(npyFile(dictFor("<f2", "(2,)"), bytesOf<std::uint16_t>({0x7c00, 0x3c00})), kWhat),
                {"0 NaN and 1 Inf", "flat index 0"}));
}

TEST(NpyTest, Float64OutsideFloatRange) {
  EXPECT_TRUE(failsWith(parseNpy(npyFile(dictFor("<f8", "(3,)"), bytesOf<double>({1.0, -1e300, 1e39})), kWhat),
                        {"2 float64 values", "outside the float32 range", "-1e+300", "flat index 1"}));
}

TEST(NpyTest, LoadNamesThePath) {
  EXPECT_TRUE(failsWith(loadNpy("/nonexistent/q.npy"), {"cannot open"}, "/nonexistent/q.npy"));
}

TEST(NpyTest, SaveRefusesInconsistentTensorsAndBadPaths) {
  Tensor bad;
  bad.shape = {2, 3};
  bad.data = {1, 2, 3};
  EXPECT_TRUE(failsWith(saveNpy("/tmp/never_written.npy", bad), {"6 elements", "holds 3 values"},
                        "/tmp/never_written.npy"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/never_written.npy"));
  EXPECT_THROW(encodeNpy(bad), std::invalid_argument);
  Tensor good;
  good.shape = {1};
  good.data = {1};
  const std::string folder = std::filesystem::temp_directory_path().string();
  EXPECT_TRUE(failsWith(saveNpy(folder, good), {"folder"}, folder));
}

TEST(NpyValues, MinusInfinityOnlyWhenTheCallerAllowsIt) {
  Tensor t({3}, {});
  t.data = {1.0f, -std::numeric_limits<float>::infinity(), 2.0f};
  const std::string bytes = encodeNpy(t);
  auto strict = parseNpy(bytes, "masked");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.error().message.find("1 Inf"), std::string::npos) << strict.error().message;
  auto relaxed = parseNpy(bytes, "masked", NpyValues::AllowMinusInfinity);
  ASSERT_TRUE(relaxed.ok()) << relaxed.error().message;
  EXPECT_TRUE(std::isinf(relaxed->data[1]));
  t.data[1] = std::numeric_limits<float>::infinity();  // +inf and NaN stay errors
  EXPECT_FALSE(parseNpy(encodeNpy(t), "x", NpyValues::AllowMinusInfinity).ok());
  t.data[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(parseNpy(encodeNpy(t), "x", NpyValues::AllowMinusInfinity).ok());
}

}  // namespace
}  // namespace mhascope::npy_test
