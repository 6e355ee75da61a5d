#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {

std::string quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

CodePoints decodeAll(std::string_view text) {
  CodePoints out;
  out.cps.reserve(text.size());
  out.offsets.reserve(text.size() + 1);
  std::size_t i = 0;
  while (i < text.size()) {
    const Utf8Step step = decodeUtf8Step(text, i);
    out.cps.push_back(step.cp);
    out.offsets.push_back(i);
    i += step.len;
  }
  out.offsets.push_back(text.size());
  return out;
}

}  // namespace mhascope::tokenize
