// Tests for the .safetensors reader and writer (core/io/safetensors.cpp): round trips, the
// fixtures in tests/fixtures/safetensors, half-precision conversions, and one test per
// malformed input (the reference validate() rules, duplicate keys,
// NaN/Inf), each checking that the message names the tensor and the numbers.

#include "io/safetensors.hpp"

#include <gtest/gtest.h>

#include "check_tensor.hpp"

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
namespace mhascope::safetensors_test {
namespace {

static_assert(std::endian::native == std::endian::little,
              "these tests build little-endian bytes from host values");

const std::string kWhat = "model.safetensors";

// Passes when `r` is an error whose message names `what` (default kWhat) and contains every word.
template <class T>
::testing::AssertionResult failsWith(const Result<T>& r, std::initializer_list<std::string_view> words,
                                   const std::string& what = kWhat) {
  return mhascope::testing::errorNaming(r, what, words);
}

std::string lengthPrefix(std::uint64_t n) {
  std::string out;
  for (int k = 0; k < 8; ++k) out += static_cast<char>((n >> (8 * k)) & 0xff);
  return out;
}

// A file with this exact header text and data section.
std::string stFile(const std::string& header, std::string_view data = {}) {
  return lengthPrefix(header.size()) + header + std::string(data);
}

template <class T>
std::string bytesOf(std::initializer_list<T> values) {
  std::string out;
  for (const T v : values) {
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    out.append(buf, sizeof(T));
  }
  return out;
}

Result<TensorMap> parse(const std::string& header, std::string_view data = {}) {
  return parseSafetensors(stFile(header, data), kWhat);
}

const std::vector<float> kMatrix = {0.5f, -1.25f, 2.0f, 3.0f, 4.5f, -6.0f};  // (2, 3), non-symmetric

void expectMatrix(const Tensor& t) {
  ASSERT_EQ(t.shape, (Shape{2, 3}));
  EXPECT_EQ(std::vector<float>(t.data.begin(), t.data.end()), kMatrix);
  EXPECT_EQ(t.data[0 * 3 + 1], -1.25f);  // row-major: a transpose would put 3.0 here
  EXPECT_EQ(t.data[1 * 3 + 0], 3.0f);
}

Tensor makeTensor(Shape shape, std::vector<float> data) {
  Tensor t;
  t.shape = std::move(shape);
  t.data.assign(data.begin(), data.end());
  return t;
}

std::string fixturePath(const std::string& name) {
  return std::string(MHASCOPE_FIXTURES_DIR) + "/safetensors/" + name;
}

// ----- round trips and well-formed files -------------------------------------------------------

TEST(SafetensorsTest, RoundTripWithMetadata) {
  TensorMap tensors;
  tensors["weight"] = makeTensor({2, 3}, kMatrix);
  tensors["bias"] = makeTensor({3}, {0.25f, -0.5f, 1.0f});
  tensors["scalar"] = makeTensor({}, {7.0f});
  tensors["empty"] = makeTensor({0, 4}, {});
  tensors["naïve ü"] = makeTensor({1}, {2.0f});
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "quote \" and \\"}};
  const std::string bytes = encodeSafetensors(tensors, metadata);
  auto back = parseSafetensorsWithMetadata(bytes, kWhat);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->metadata, metadata);
  ASSERT_EQ(back->tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(back->tensors.count(name));
    EXPECT_EQ(back->tensors.at(name).shape, t.shape);
    EXPECT_EQ(back->tensors.at(name).data, t.data);
  }
  expectMatrix(back->tensors.at("weight"));
}

TEST(SafetensorsTest, EncodedLayoutFollowsTheReferenceWriter) {
  TensorMap tensors;
  tensors["b"] = makeTensor({2}, {1, 2});
  tensors["a"] = makeTensor({1}, {3});
  const std::string bytes = encodeSafetensors(tensors);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 12);
  const std::string header = bytes.substr(8, n);
  // Sorted names, contiguous offsets from 0, space padding, no __metadata__ when there is none.
  EXPECT_EQ(
      header.substr(0, header.find_last_not_of(' ') + 1),
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})");
  EXPECT_EQ(bytes.substr(8 + n), bytesOf<float>({3, 1, 2}));
}

TEST(SafetensorsTest, EncodeMatchesFixtureByteForByte) {
  auto bytes = readFile(fixturePath("f32_weight_bias.safetensors"));
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  auto contents = parseSafetensorsWithMetadata(*bytes, kWhat);
  ASSERT_TRUE(contents.ok()) << contents.error().message;
  expectMatrix(contents->tensors.at("weight"));
  EXPECT_EQ(contents->tensors.at("bias").data, (FloatBuffer{0.25f, -0.5f, 1.0f}));
  EXPECT_EQ(contents->metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(encodeSafetensors(contents->tensors, contents->metadata), *bytes);
}

TEST(SafetensorsTest, ReadsHalfAndDoubleFixture) {
  auto tensors = loadSafetensors(fixturePath("half_types.safetensors"));
  ASSERT_TRUE(tensors.ok()) << tensors.error().message;
  for (const char* name : {"h", "b", "d"}) {
    SCOPED_TRACE(name);
    expectMatrix(tensors->at(name));
  }
}

TEST(SafetensorsTest, HalfPrecisionSpecialValues) {
  // F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), -0. BF16: 1, -2, 2^-133 (subnormal).
  const std::string f16 = bytesOf<std::uint16_t>({0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000});
  const std::string bf16 = bytesOf<std::uint16_t>({0x3f80, 0xc000, 0x0001});
  auto t = parse(
      R"({"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[10,16]}})",
      f16 + bf16);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->at("h").data, (FloatBuffer{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24), -0.0f}));
  EXPECT_TRUE(std::signbit(t->at("h").data[4]));
  EXPECT_EQ(t->at("b").data, (FloatBuffer{1.0f, -2.0f, std::ldexp(1.0f, -133)}));
}

TEST(SafetensorsTest, OffsetsNeedNotFollowNameOrder) {
  // "z" comes first in the data; the reference sorts by offset, not by name.
  auto t = parse(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      bytesOf<float>({1, 2}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->at("z").data, (FloatBuffer{1}));
  EXPECT_EQ(t->at("a").data, (FloatBuffer{2}));
}

TEST(SafetensorsTest, AcceptsWhatTheReferenceAccepts) {
  auto empty = parse("{}");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_TRUE(empty->empty());
  // null metadata, unknown fields (even nested), whitespace and padding, zero-size tensors.
  auto t = parse(R"(  {"__metadata__": null, "x": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0],
                      "extra": {"deep": [1, {"k": null}]}}, "y": {"dtype":"F32","shape":[],"data_offsets":[0,4]}}     )",
                 bytesOf<float>({5}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->at("x").data.empty());
  EXPECT_EQ(t->at("y").data, (FloatBuffer{5}));
}

TEST(SafetensorsTest, SaveAndLoadThroughFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mhascope_safetensors_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "w.safetensors").string();
  TensorMap tensors;
  tensors["in_proj_weight"] = makeTensor({2, 3}, kMatrix);
  ASSERT_TRUE(saveSafetensors(path, tensors, {{"format", "pt"}}).ok());
  auto back = loadSafetensors(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  expectMatrix(back->at("in_proj_weight"));
  std::filesystem::remove_all(dir);
}

// ----- malformed files: one test per case --------------------------------------------------------

TEST(SafetensorsTest, FileShorterThanTheLengthField) {
  EXPECT_TRUE(failsWith(parseSafetensors(std::string("\x10\x00\x00", 3), kWhat),
                        {"only 3 bytes", "8-byte header length"}));
  EXPECT_TRUE(failsWith(parseSafetensors("", kWhat), {"only 0 bytes"}));
}

TEST(SafetensorsTest, HeaderLengthOverTheLimit) {
  EXPECT_TRUE(failsWith(parseSafetensors(lengthPrefix(100'000'001) + "{}", kWhat),
                        {"header length 100000001", "limit of 100000000"}));
  EXPECT_TRUE(failsWith(parseSafetensors(lengthPrefix(std::numeric_limits<std::uint64_t>::max()) + "{}", kWhat),
                        {"header length 18446744073709551615", "limit"}));
}

TEST(SafetensorsTest, HeaderLengthLargerThanFile) {
  EXPECT_TRUE(failsWith(parseSafetensors(lengthPrefix(64) + "{}", kWhat),
                        {"header length 64", "larger than the file", "2 bytes"}));
}

TEST(SafetensorsTest, HeaderNotUtf8) {
  EXPECT_TRUE(failsWith(parse("{\"a\xff\":{}}"), {"not valid UTF-8", "0xff", "offset 3"}));
  EXPECT_TRUE(failsWith(parse("{\"\xc0\xaf\":{}}"), {"not valid UTF-8", "0xc0"}));      // overlong '/'
  EXPECT_TRUE(failsWith(parse("{\"\xed\xa0\x80\":{}}"), {"not valid UTF-8", "0xed"}));  // a surrogate
  EXPECT_TRUE(failsWith(parse("{\"\xe2\x82\":{}}"), {"not valid UTF-8"}));              // cut short
}

TEST(SafetensorsTest, HeaderNotJson) {
  EXPECT_TRUE(failsWith(parse("{\"a\": }"), {"not valid JSON"}));
  EXPECT_TRUE(failsWith(parse("{} {}"), {"not valid JSON"}));
  EXPECT_TRUE(failsWith(parse(""), {"not valid JSON"}));
  EXPECT_TRUE(failsWith(parse("{\"a\": NaN}"), {"not valid JSON"}));
}

TEST(SafetensorsTest, HeaderNotAnObject) {
  EXPECT_TRUE(failsWith(parse("[1, 2]"), {"not a JSON object", "array"}));
  EXPECT_TRUE(failsWith(parse("42"), {"not a JSON object", "42"}));
  EXPECT_TRUE(failsWith(parse("\"x\""), {"not a JSON object", "string"}));
}

TEST(SafetensorsTest, DuplicateKeys) {
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_TRUE(failsWith(parse(R"({"w":)" + entry + R"(,"w":)" + entry + "}", bytesOf<float>({1})),
                        {"tensor name 'w' twice"}));
  EXPECT_TRUE(failsWith(
      parse(R"({"w":{"dtype":"F32","shape":[1],"shape":[1],"data_offsets":[0,4]}})", bytesOf<float>({1})),
      {"tensor 'w'", "key 'shape' twice"}));
  EXPECT_TRUE(failsWith(parse(R"({"__metadata__":{"a":"1","a":"2"}})"), {"__metadata__", "key 'a' twice"}));
  EXPECT_TRUE(failsWith(parse(R"({"__metadata__":{},"__metadata__":{}})"), {"'__metadata__' twice"}));
  EXPECT_TRUE(failsWith(
      parse(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":{"k":1,"k":2}}})", bytesOf<float>({1})),
      {"key 'k' twice", "tensor 'w'"}));
}

TEST(SafetensorsTest, MetadataMustMapStringsToStrings) {
  EXPECT_TRUE(failsWith(parse(R"({"__metadata__":{"epoch":3}})"),
                        {"__metadata__", "'epoch'", "must be a string", "3"}));
  EXPECT_TRUE(failsWith(parse(R"({"__metadata__":{"a":["x"]}})"), {"__metadata__", "'a'", "must be a string"}));
  EXPECT_TRUE(failsWith(parse(R"({"__metadata__":["x"]})"), {"__metadata__ must be an object"}));
  EXPECT_TRUE(failsWith(parse(R"({"__metadata__":"x"})"), {"__metadata__ must be an object"}));
}

TEST(SafetensorsTest, EntryFieldsMissingOrMistyped) {
  EXPECT_TRUE(failsWith(parse(R"({"w":[1]})"), {"tensor 'w' must be an object"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":3})"), {"tensor 'w' must be an object", "3"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"shape":[1],"data_offsets":[0,4]}})"), {"tensor 'w' has no \"dtype\""}));
  EXPECT_TRUE(
      failsWith(parse(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})"), {"tensor 'w' has no \"shape\""}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[1]}})"), {"tensor 'w' has no \"data_offsets\""}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})"),
                        {"tensor 'w' dtype must be a string"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":"2x3","data_offsets":[0,4]}})"),
                        {"tensor 'w' shape must be an array"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,4]}})"),
                        {"tensor 'w' shape has a negative value -3"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,4]}})"),
                        {"tensor 'w' shape has 2.5", "not an integer"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})"),
                        {"tensor 'w' shape must hold integers"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})"),
                        {"tensor 'w' data_offsets must be [begin, end]", "3 values", "[0, 4, 8]"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]}})"),
                        {"tensor 'w' data_offsets has 18446744073709551616", "not an integer below 2^64"}));
}

TEST(SafetensorsTest, UnknownDtype) {
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", bytesOf<float>({1})),
                        {"tensor 'w' has unknown dtype 'F33'", "F32"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", bytesOf<float>({1})),
                        {"unknown dtype 'f32'"}));
}

TEST(SafetensorsTest, KnownButUnsupportedDtypes) {
  struct Case {
    const char* dtype;
    int bytes;
  };
  for (const Case c : {Case{"I64", 8}, Case{"I32", 4}, Case{"U8", 1}, Case{"BOOL", 1}, Case{"F8_E4M3", 1},
                       Case{"F8_E5M2", 1}, Case{"U64", 8}, Case{"C64", 8}}) {
    SCOPED_TRACE(c.dtype);
    const std::string header = std::string(R"({"mask":{"dtype":")") + c.dtype +
                               R"(","shape":[2],"data_offsets":[0,)" + std::to_string(2 * c.bytes) + "]}}";
    EXPECT_TRUE(
        failsWith(parse(header, std::string(static_cast<std::size_t>(2 * c.bytes), '\0')),
                  {std::string("unsupported dtype ") + c.dtype + " for tensor 'mask'", "F32, F64, F16, BF16"}));
  }
  EXPECT_TRUE(failsWith(loadSafetensors(fixturePath("i64.safetensors")),
                        {"unsupported dtype I64 for tensor 'ids'"}, fixturePath("i64.safetensors")));
}

TEST(SafetensorsTest, OffsetsEndBeforeBegin) {
  EXPECT_TRUE(
      failsWith(parse(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", bytesOf<float>({1, 2})),
                {"tensor 'w'", "data_offsets [8, 4]", "end < begin"}));
}

TEST(SafetensorsTest, OffsetsOutOfRange) {
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", bytesOf<float>({1})),
                        {"tensor 'w'", "data_offsets [0, 8]", "out of range", "only 4 bytes"}));
  EXPECT_TRUE(failsWith(
      parse(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551611,18446744073709551615]}})",
            bytesOf<float>({1})),
      {"tensor 'w'", "out of range"}));
}

TEST(SafetensorsTest, BytesDoNotMatchShapeTimesDtype) {
  EXPECT_TRUE(failsWith(
      parse(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", bytesOf<float>({1, 2, 3, 4, 5})),
      {"tensor 'w' has 20 bytes", "data_offsets [0, 20]", "shape [2, 3] of F32 needs 24 bytes"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", std::string(2, '\0')),
                        {"tensor 'w' shape [3] of F4", "not a whole number of bytes", "12 bits"}));
}

TEST(SafetensorsTest, ShapeOverflow) {
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
                              bytesOf<float>({1})),
                        {"tensor 'w' shape [4294967296, 4294967296] overflows"}));
  EXPECT_TRUE(failsWith(parse(R"({"w":{"dtype":"F32","shape":[18446744073709551615,0],"data_offsets":[0,0]}})"),
                        {"tensor 'w' shape", "overflows"}));
  EXPECT_TRUE(failsWith(
      parse(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}})", bytesOf<float>({1})),
      {"tensor 'w'", "of F64 overflows"}));
}

TEST(SafetensorsTest, GapBetweenTensors) {
  EXPECT_TRUE(failsWith(
      parse(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
          bytesOf<float>({1, 2, 3})),
      {"gap of 4 bytes", "'a'", "[0, 4]", "'b'", "[8, 12]"}));
  EXPECT_TRUE(
      failsWith(parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", bytesOf<float>({1, 2})),
                {"tensor 'a'", "starts at byte 4 instead of 0"}));
}

TEST(SafetensorsTest, OverlappingTensors) {
  EXPECT_TRUE(failsWith(
      parse(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          bytesOf<float>({1, 2, 3})),
      {"tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a' (data_offsets [0, 8])"}));
  EXPECT_TRUE(failsWith(
      parse(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          bytesOf<float>({1})),
      {"overlaps"}));
}

TEST(SafetensorsTest, TrailingBytes) {
  EXPECT_TRUE(
      failsWith(parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytesOf<float>({1, 2})),
                {"trailing bytes", "cover 4 bytes", "is 8 bytes", "4 bytes extra"}));
  EXPECT_TRUE(failsWith(parse("{}", "xyz"), {"trailing bytes", "3 bytes extra"}));
}

TEST(SafetensorsTest, NanAndInfAreErrorsNamingTensorAndCounts) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(failsWith(
      parse(
          R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
          bytesOf<float>({1, nan, nan, -inf, inf, 0})),
      {"never silently zeroed", "tensor 'a' has 2 NaN and 1 Inf values (of 4, the first at flat index 1)",
       "tensor 'b' has 0 NaN and 1 Inf values (of 2, the first at flat index 0)"}));
  EXPECT_TRUE(failsWith(parse(R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})",
                              bytesOf<std::uint16_t>({0x3c00, 0x7e00})),
                        {"tensor 'h' has 1 NaN and 0 Inf"}));
  EXPECT_TRUE(failsWith(
      parse(R"({"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}})", bytesOf<std::uint16_t>({0xff80})),
      {"tensor 'b' has 0 NaN and 1 Inf"}));
}

TEST(SafetensorsTest, Float64OutsideFloatRange) {
  EXPECT_TRUE(failsWith(
      parse(R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", bytesOf<double>({1.0, 1e300})),
      {"tensor 'd' has 1 F64 values outside the float32 range", "1e+300", "flat index 1"}));
}

TEST(SafetensorsTest, DeepNestingIsRefused) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(failsWith(
      parse(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":)" + deep + "}}", bytesOf<float>({1})),
      {"nests deeper than 128"}));
}

TEST(SafetensorsTest, LoadNamesThePath) {
  EXPECT_TRUE(
      failsWith(loadSafetensors("/nonexistent/w.safetensors"), {"cannot open"}, "/nonexistent/w.safetensors"));
}

TEST(SafetensorsTest, SaveRefusesWhatCannotBeEncoded) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "mhascope_never_written.safetensors").string();
  TensorMap mismatch;
  mismatch["w"] = makeTensor({2, 3}, {1, 2, 3});
  EXPECT_TRUE(failsWith(saveSafetensors(path, mismatch), {"tensor 'w'", "6 elements", "holds 3 values"}, path));
  EXPECT_THROW(encodeSafetensors(mismatch), std::invalid_argument);
  TensorMap reserved;
  reserved["__metadata__"] = makeTensor({1}, {1});
  EXPECT_TRUE(failsWith(saveSafetensors(path, reserved), {"__metadata__"}, path));
  TensorMap badName;
  badName["\xff"] = makeTensor({1}, {1});
  EXPECT_TRUE(failsWith(saveSafetensors(path, badName), {"UTF-8"}, path));
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace mhascope::safetensors_test
