// CSV export: RFC 4180 quoting of awkward tokens, numbers with '.' whatever the locale,
// non-finite values spelled out, label/shape mismatches and bad paths reported as errors.
#include "io/csv.hpp"

#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "io/file_io.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;

Slice2D makeSlice(const std::vector<float>& data, int rows, int cols) {
  Slice2D s;
  s.stage = StageId::Weights;
  s.rows = rows;
  s.cols = cols;
  s.data = data.data();
  s.rowAxis = "T_q";
  s.colAxis = "T_k";
  return s;
}

fs::path scratchDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mhascope_csv_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

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

TEST(Csv, TableHasHeaderRowLabelsAndQuotedTokens) {
  const std::vector<float> data = {0.5f, 0.25f, 0.25f,  //
                                   1.0f, 0.0f, std::numeric_limits<float>::quiet_NaN()};
  Slice2D s = makeSlice(data, 2, 3);
  s.rowLabels = {"a,b", "say \"hi\""};
  s.colLabels = {"line\nbreak", "ok", "x\xff"};  // invalid UTF-8 becomes U+FFFD
  auto csv = sliceToCsv(s);
  ASSERT_TRUE(csv.ok()) << csv.error().message;
  const std::string want =
      "T_q \\ T_k,\"line\nbreak\",ok,x\xef\xbf\xbd\r\n"
      "\"a,b\",0.5,0.25,0.25\r\n"
      "\"say \"\"hi\"\"\",1,0,nan\r\n";
  EXPECT_EQ(*csv, want);
}

TEST(Csv, MaskedCellsAreWrittenAsMinusInf) {
  const std::vector<float> data = {1.5f, -std::numeric_limits<float>::infinity()};
  auto csv = sliceToCsv(makeSlice(data, 1, 2));
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(*csv, "T_q \\ T_k,0,1\r\n0,1.5,-inf\r\n");  // no labels → indices
}

TEST(Csv, NumbersUseADotEvenUnderACommaLocale) {
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = old ? old : "C";
  if (!std::setlocale(LC_NUMERIC, "de_DE.UTF-8") && !std::setlocale(LC_NUMERIC, "de_DE")) {
    GTEST_SKIP() << "no German locale installed; the to_chars path is locale-free anyway";
  }
  char probe[16];
  std::snprintf(probe, sizeof probe, "%.1f", 0.5);  // proves the locale really writes "0,5"
  const std::vector<float> data = {0.5f, -2.75f};
  auto csv = sliceToCsv(makeSlice(data, 1, 2));
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_STREQ(probe, "0,5");
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(*csv, "T_q \\ T_k,0,1\r\n0,0.5,-2.75\r\n");
}

TEST(Csv, BadSlicesAreErrors) {
  const std::vector<float> data = {1, 2, 3, 4};
  Slice2D s = makeSlice(data, 2, 2);
  s.rowLabels = {"only one"};
  auto r = sliceToCsv(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("1 row labels but 2 rows"), std::string::npos) << r.error().message;
  EXPECT_FALSE(sliceToCsv(makeSlice(data, 0, 2)).ok());
  Slice2D noData = makeSlice(data, 2, 2);
  noData.data = nullptr;
  EXPECT_FALSE(sliceToCsv(noData).ok());
}

TEST(Csv, ExportWritesTheFileAndFailuresLeaveNothing) {
  const fs::path dir = scratchDir("export");
  const std::vector<float> data = {0.5f, 0.5f};
  const Slice2D s = makeSlice(data, 1, 2);
  const std::string good = (dir / "w.csv").string();
  ASSERT_TRUE(exportCsv(good, s).ok());
  auto back = readFile(good);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "T_q \\ T_k,0,1\r\n0,0.5,0.5\r\n");

  const std::vector<std::string> badPaths = {(dir / "missing" / "w.csv").string(), dir.string(), "/proc/nope.csv"};
  for (const std::string& bad : badPaths) {
    auto st = exportCsv(bad, s);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find(bad), std::string::npos) << st.error().message;
  }
  // A failed export leaves an existing file as it was.
  Slice2D broken = s;
  broken.rows = 0;
  EXPECT_FALSE(exportCsv(good, broken).ok());
  EXPECT_EQ(*readFile(good), "T_q \\ T_k,0,1\r\n0,0.5,0.5\r\n");
  // No temp files left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope
