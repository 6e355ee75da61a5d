#include "tokenize/tokenizer_files.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace mhascope::tokenize {

namespace fs = std::filesystem;

Result<std::string> readTokenizerFile(const std::string& path, std::size_t maxBytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return makeError("cannot read '" + path + "': no such file");
  if (!fs::is_regular_file(status)) return makeError("cannot read '" + path + "': not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) return makeError("cannot read '" + path + "': " + ec.message());
  if (size > maxBytes) {
    return makeError("'" + path + "' is " + std::to_string(size) + " bytes; a tokenizer file may hold at most " +
                     std::to_string(maxBytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("cannot read '" + path + "': cannot open it");
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(size));
  // At most maxBytes + 1, in case the file grew since its size was taken.
  char buf[1 << 16];
  while (in && bytes.size() <= maxBytes) {
    in.read(buf, sizeof buf);
    bytes.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return makeError("cannot read '" + path + "': read error");
  if (bytes.size() > maxBytes) return makeError("'" + path + "' grew past " + std::to_string(maxBytes) + " bytes while being read");
  return bytes;
}

Result<BpeTokenizer> loadTokenizer(const std::string& path) {
  std::error_code ec;
  const bool isDir = fs::is_directory(path, ec);
  const std::string dir = isDir ? path : fs::path(path).parent_path().string();
  const std::string json = isDir ? (fs::path(path) / "tokenizer.json").string() : path;
  if (!isDir || fs::exists(json, ec)) {
    auto bytes = readTokenizerFile(json, kMaxTokenizerFileBytes);
    if (!bytes) return bytes.error();
    return BpeTokenizer::fromTokenizerJson(*bytes, "'" + json + "'");
  }
  const std::string vocab = (fs::path(dir) / "vocab.json").string();
  const std::string merges = (fs::path(dir) / "merges.txt").string();
  if (!fs::exists(vocab, ec) || !fs::exists(merges, ec)) {
    return makeError("'" + path + "' holds no tokenizer: neither tokenizer.json nor vocab.json + merges.txt");
  }
  auto vocabBytes = readTokenizerFile(vocab, kMaxTokenizerFileBytes);
  if (!vocabBytes) return vocabBytes.error();
  auto mergesBytes = readTokenizerFile(merges, kMaxTokenizerFileBytes);
  if (!mergesBytes) return mergesBytes.error();
  return BpeTokenizer::fromVocabAndMerges(*vocabBytes, "'" + vocab + "'", *mergesBytes, "'" + merges + "'");
}

}  // namespace mhascope::tokenize
