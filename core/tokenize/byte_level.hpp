// GPT-2's byte-to-unicode map: byte-level BPE works on bytes, but its vocabulary is stored as text,
// so each of the 256 bytes is spelled as one printable code point. The printable bytes ('!' … '~',
// '¡' … '¬', '®' … 'ÿ') stand for themselves; the other 68 (controls, space, U+00AD …) are moved
// to U+0100 upwards in byte order — which is why a leading space shows up as 'Ġ' (U+0120) and a
// newline as 'Ċ' (U+010A) in every GPT-2-family vocabulary.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace mhascope::tokenize {

// The code point that spells byte b.
char32_t byteToUnicode(unsigned char b);
// The byte a code point spells, or nothing for a code point outside the map.
std::optional<unsigned char> unicodeToByte(char32_t cp);
// Raw bytes → their spelling in the vocabulary ("\x20hi" → "Ġhi").
std::string bytesToVocabText(std::string_view bytes);
// A vocabulary entry → the bytes it stands for ("Ġhi" → " hi"). Code points outside the map
// (possible only in a hand-made vocabulary) keep their own UTF-8 bytes, as Hugging Face's
// ByteLevel decoder does.
std::string vocabTextToBytes(std::string_view text);

// A token's bytes made readable for display: the leading-space marker and every space become
// '␣' (U+2423), tab "\t", newline "\n", carriage return "\r", other control characters "U+0007",
// and bytes that are not whole UTF-8 characters (one emoji split over two tokens) "<0xF0>".
std::string visibleToken(std::string_view bytes);

}  // namespace mhascope::tokenize
