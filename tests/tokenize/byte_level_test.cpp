// GPT-2's byte-to-unicode map and the display of tokens.
#include <gtest/gtest.h>

#include <set>

#include "tokenize/byte_level.hpp"

namespace mhascope::tokenize {
namespace {

TEST(ByteLevel, MapIsABijectionOnto256PrintableCodePoints) {
  std::set<char32_t> seen;
  for (unsigned b = 0; b < 256; ++b) {
    const char32_t cp = byteToUnicode(static_cast<unsigned char>(b));
    EXPECT_TRUE(seen.insert(cp).second) << b;
    ASSERT_TRUE(unicodeToByte(cp).has_value()) << b;
    EXPECT_EQ(*unicodeToByte(cp), b);
  }
  EXPECT_EQ(byteToUnicode(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(byteToUnicode('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(byteToUnicode('a'), U'a');
  EXPECT_EQ(byteToUnicode(0xAD), 0x143u);  // soft hyphen, the last moved byte
  EXPECT_FALSE(unicodeToByte(0x144).has_value());
  EXPECT_FALSE(unicodeToByte(0x20).has_value());  // a raw space never appears in the vocabulary
}

TEST(ByteLevel, RoundTripsArbitraryBytes) {
  std::string all;
  for (unsigned b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(vocabTextToBytes(bytesToVocabText(all)), all);
  EXPECT_EQ(bytesToVocabText(" hi"), "\xC4\xA0hi");
}

TEST(ByteLevel, VisibleTokenShowsSpacesAndControls) {
  EXPECT_EQ(visibleToken(" world"), "\xE2\x90\xA3world");
  EXPECT_EQ(visibleToken("a\tb\nc\r"), "a\\tb\\nc\\r");
  EXPECT_EQ(visibleToken("\x07"), "U+0007");
  EXPECT_EQ(visibleToken("\xF0\x9F"), "<0xF0><0x9F>");  // half an emoji
  EXPECT_EQ(visibleToken("caf\xC3\xA9"), "caf\xC3\xA9");
}

}  // namespace
}  // namespace mhascope::tokenize
