// core/util: UTF-8 decoding/encoding and the number formatting shared by the readers, the
// exporter and the command line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/binary_decode.hpp"
#include "util/format.hpp"
#include "util/utf8.hpp"

namespace mhascope {
namespace {

TEST(Utf8, DecodeWellFormedAndRefuseTheRest) {
  char32_t cp = 0;
  EXPECT_EQ(decodeUtf8("A", 0, cp), 1u);
  EXPECT_EQ(cp, U'A');
  EXPECT_EQ(decodeUtf8("\xC3\xA9", 0, cp), 2u);  // é
  EXPECT_EQ(cp, U'\u00E9');
  EXPECT_EQ(decodeUtf8("\xE6\x97\xA5", 0, cp), 3u);  // 日
  EXPECT_EQ(cp, U'\u65E5');
  EXPECT_EQ(decodeUtf8("\xF0\x9F\x98\x80", 0, cp), 4u);  // 😀
  EXPECT_EQ(cp, U'\U0001F600');
  EXPECT_EQ(decodeUtf8("\x80", 0, cp), 0u) << "stray continuation byte";
  EXPECT_EQ(decodeUtf8("\xC0\xAF", 0, cp), 0u) << "overlong";
  EXPECT_EQ(decodeUtf8("\xED\xA0\x80", 0, cp), 0u) << "surrogate";
  EXPECT_EQ(decodeUtf8("\xF4\x90\x80\x80", 0, cp), 0u) << "above U+10FFFF";
  EXPECT_EQ(decodeUtf8("\xE6\x97", 0, cp), 0u) << "truncated";
  EXPECT_EQ(firstInvalidUtf8("ab\xC3\xA9" "c"), std::string_view::npos);
  EXPECT_EQ(firstInvalidUtf8("ab\xC3(c"), 2u);
}

TEST(Utf8, EncodeRoundTripsAndNamesCodePoints) {
  for (char32_t c : {U'A', U'\u00E9', U'\u65E5', U'\U0001F600', U'\U0010FFFF'}) {
    std::string s;
    appendUtf8(s, c);
    char32_t back = 0;
    EXPECT_EQ(decodeUtf8(s, 0, back), s.size());
    EXPECT_EQ(back, c);
  }
  EXPECT_EQ(codePointName(U'\u00E9'), "U+00E9");
  EXPECT_EQ(codePointName(U'\U0001F600'), "U+1F600");
}

TEST(Format, ThousandsDoublesAndMessages) {
  EXPECT_EQ(withThousands(0), "0");
  EXPECT_EQ(withThousands(999), "999");
  EXPECT_EQ(withThousands(1050624), "1,050,624");
  EXPECT_EQ(withThousands(-12345), "-12,345");
  EXPECT_EQ(withThousands(-123), "-123");
  EXPECT_EQ(formatDouble(0.1), "0.1");
  EXPECT_EQ(formatDouble(static_cast<double>(0.1f)), "0.100000001") << "nine digits tell floats apart";
  EXPECT_EQ(fileError("q.npy", "bad").message, "q.npy: bad");
}

TEST(Format, PrintableMessageEscapesControlBytes) {
  using namespace std::string_literals;
  EXPECT_EQ(printableMessage("model_type 'gpt2\0x' is unknown"s), "model_type 'gpt2\\x00x' is unknown");
  EXPECT_EQ(printableMessage("tensor '\x1b[31mred'"), "tensor '\\x1b[31mred'");
  EXPECT_EQ(printableMessage("a\tb\rc\x7f"), "a\\x09b\\x0dc\\x7f");
  EXPECT_EQ(printableMessage("two\nlines · ünïcode"), "two\nlines · ünïcode");  // newlines and UTF-8 stay
}

TEST(Format, CheckedElementCount) {
  EXPECT_EQ(checkedElementCount({}), 1);
  EXPECT_EQ(checkedElementCount({2, 3, 4}), 24);
  EXPECT_EQ(checkedElementCount({2, 0, 4}), 0);
  EXPECT_FALSE(checkedElementCount({2, -1}).has_value());
  const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  EXPECT_FALSE(checkedElementCount({big, 2}).has_value());
  EXPECT_FALSE(checkedElementCount({big, 2, 0}).has_value()) << "checked on the non-zero dims";
  EXPECT_EQ(checkedElementCount({10, 10}, 100), 100);
  EXPECT_FALSE(checkedElementCount({10, 11}, 100).has_value());
}

TEST(Format, CellValueReadsTheSameOnScreenAndInPictures) {
  EXPECT_EQ(formatCellValue(0.123f), "0.12");
  EXPECT_EQ(formatCellValue(-0.001f), "0.00") << "no -0.00";
  EXPECT_EQ(formatCellValue(12.34f), "12.3");
  EXPECT_EQ(formatCellValue(123.4f), "123");
  EXPECT_EQ(formatCellValue(12345.0f), "1.2e+04");
  EXPECT_EQ(formatCellValue(std::numeric_limits<float>::quiet_NaN()), "NaN");
  EXPECT_EQ(formatCellValue(std::numeric_limits<float>::infinity()), "+inf");
  EXPECT_EQ(formatCellValue(-std::numeric_limits<float>::infinity()), "") << "blocked: said with colour";
  EXPECT_EQ(formatGeneral(-0.0, 3), "0");
  EXPECT_EQ(formatGeneral(0.5, 3), "0.5");
  EXPECT_EQ(formatFixed(0.9349, 2), "0.93");
  EXPECT_EQ(formatFixed(0.2171, 3, true), "+0.217");
  EXPECT_EQ(formatFixed(-0.469, 3, true), "-0.469");
  EXPECT_EQ(formatFixed(19.0, 3), "19.000");
}

// The .npy and .safetensors writers' one float32 encoder: little-endian whatever the host.
TEST(BinaryEncode, Float32LittleEndian) {
  std::string out = "x";
  const float values[] = {1.0f, -2.5f};
  detail::appendFloat32LE(out, values);
  EXPECT_EQ(out, std::string("x\x00\x00\x80\x3f\x00\x00\x20\xc0", 9));
}

}  // namespace
}  // namespace mhascope
