// UTF-8 in one place: decoding (strict RFC 3629, the rule of Rust's str::from_utf8 and of the
// safetensors reference), encoding, and how a code point is spelled out when it cannot be shown
// ("U+1F600"). The tokenizer, the .safetensors reader and the exporter's font fallback use these.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mhascope {

// Decodes the code point at s[i] into `cp`; returns its byte length (1 … 4), or 0 when the bytes
// there are not well-formed UTF-8 (a stray continuation byte, a truncated sequence, an overlong
// form, a surrogate, anything above U+10FFFF).
std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp);
// Offset of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t firstInvalidUtf8(std::string_view s);
// Appends cp (≤ U+10FFFF) as 1 … 4 bytes.
void appendUtf8(std::string& out, char32_t cp);
// "U+00E9", "U+1F600": at least four hex digits, upper case.
std::string codePointName(char32_t cp);

}  // namespace mhascope
