// A copy of a fixture model folder for the app tests, with a tokenizer of its own (the fixtures
// carry none).
#pragma once

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mhascope {

// The byte each id of modelFolderCopy's tokenizer stands for: 'a'..'z' are ids 0-25, the space 26, every other
// byte 27 and up in byte order.
inline std::vector<int> modelFolderCopyBytes() {
  std::vector<int> order;
  for (int b = 'a'; b <= 'z'; ++b) order.push_back(b);
  order.push_back(' ');
  for (int b = 0; b < 256; ++b)
    if (std::find(order.begin(), order.end(), b) == order.end()) order.push_back(b);
  return order;
}

// A copy of a fixture model folder (tests/fixtures/models) with a byte-level tokenizer.json of one
// token per byte, no merges: 'a'..'z' are ids 0-25, the space ('Ġ') 26, every other byte 27 and up.
inline std::string modelFolderCopy(const std::filesystem::path& dir, const std::string& fixture) {
  const std::filesystem::path to = dir / fixture;
  std::filesystem::copy(std::filesystem::path(MHASCOPE_SOURCE_DIR) / "tests/fixtures/models" / fixture, to, std::filesystem::copy_options::recursive);
  // GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others for 256 + n.
  std::vector<int> unicodeOf(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    unicodeOf[static_cast<std::size_t>(b)] = printable ? b : next++;
  }
  const std::vector<int> order = modelFolderCopyBytes();
  std::string vocab;
  for (std::size_t id = 0; id < order.size(); ++id) {
    char esc[16];
    std::snprintf(esc, sizeof esc, "\\u%04x", unicodeOf[static_cast<std::size_t>(order[id])]);
    vocab += std::string(id ? ", " : "") + "\"" + esc + "\": " + std::to_string(id);
  }
  std::ofstream(to / "tokenizer.json")
      << R"({"version": "1.0", "added_tokens": [], "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null, "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "vocab": {)" << vocab << R"(}, "merges": []}})";
  return to.string();
}

}  // namespace mhascope
