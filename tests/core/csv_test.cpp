// CSV pieces: RFC 4180 quoting of awkward tokens, numbers with '.' whatever the locale,
// non-finite values spelled out.
#include "io/csv.hpp"

#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <limits>
#include <string>

namespace mhascope {
namespace {

TEST(Csv, FieldsAreQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField("caf\u00e9"), "caf\u00e9");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("line\nbreak"), "\"line\nbreak\"");
  EXPECT_EQ(csvField("cr\rhere"), "\"cr\rhere\"");
  EXPECT_EQ(csvField(""), "");
}

TEST(Csv, NumbersRoundTripAndNonFiniteAreExplicit) {
  EXPECT_EQ(csvNumber(0.5f), "0.5");
  EXPECT_EQ(csvNumber(-1.25f), "-1.25");
  EXPECT_EQ(csvNumber(0.0f), "0");
  EXPECT_EQ(csvNumber(std::numeric_limits<float>::quiet_NaN()), "nan");
  EXPECT_EQ(csvNumber(-std::numeric_limits<float>::quiet_NaN()), "nan");
  EXPECT_EQ(csvNumber(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(csvNumber(-std::numeric_limits<float>::infinity()), "-inf");
  // Shortest form that reads back to the same float.
  for (float v : {0.1f, 1.0f / 3.0f, 1e-7f, 123456.789f, -3.4028235e38f}) {
    EXPECT_EQ(std::stof(csvNumber(v)), v) << csvNumber(v);
  }
}

TEST(Csv, NumbersUseADotEvenUnderACommaLocale) {
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = old ? old : "C";
  if (!std::setlocale(LC_NUMERIC, "de_DE.UTF-8") && !std::setlocale(LC_NUMERIC, "de_DE")) {
    GTEST_SKIP() << "no German locale installed; the to_chars path is locale-free anyway";
  }
  char probe[16];
  std::snprintf(probe, sizeof probe, "%.1f", 0.5);  // proves the locale really writes "0,5"
  const std::string half = csvNumber(0.5f), negative = csvNumber(-2.75f);
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_STREQ(probe, "0,5");
  EXPECT_EQ(half, "0.5");
  EXPECT_EQ(negative, "-2.75");
}

}  // namespace
}  // namespace mhascope
