#include "tokenize/tokenizer_files.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include <cstdio>

#include <nlohmann/json.hpp>

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

namespace {

// The entries of one object of a JSON text, found by its path of keys, counted without building
// the document (a counting pass costs time, not memory). A malformed text counts what it can: the
// real parse reports the error.
class EntryCounter : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit EntryCounter(std::vector<std::string> target) : target_(std::move(target)) {}
  std::int64_t count() const { return count_; }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (path_ == target_) ++count_;
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool open() {
    path_.push_back(key_);
    key_.clear();
    return path_.size() <= 64;  // deeper than any tokenizer: the real parse refuses it by name
  }
  bool close() {
    if (!path_.empty()) path_.pop_back();
    return true;
  }
  std::vector<std::string> target_, path_;
  std::string key_;
  std::int64_t count_ = 0;
};

std::int64_t countEntries(const std::string& text, std::vector<std::string> path) {
  EntryCounter counter(std::move(path));
  nlohmann::json::sax_parse(text, &counter, nlohmann::json::input_format_t::json, false);
  return counter.count();
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1 << 20));
  return buf;
}

Status checkBudget(const std::vector<std::string>& files, const TokenizerLimits& limits) {
  if (limits.memoryBudgetBytes == 0) return Ok{};
  std::uint64_t bytes = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const auto n = fs::file_size(f, ec);
    if (!ec) bytes += n;
  }
  const std::uint64_t estimate = estimateTokenizerBytes(bytes);
  if (estimate <= limits.memoryBudgetBytes) return Ok{};
  return makeError("reading the tokenizer '" + files.front() + "' (" + mib(static_cast<double>(bytes)) + ") holds about " +
                   mib(static_cast<double>(estimate)) + ", more than the memory budget of " +
                   mib(static_cast<double>(limits.memoryBudgetBytes)) + " (raise it with --memory-budget MiB)");
}

// A model's embedding table is often larger than its tokenizer's vocabulary (padded), and a
// slightly smaller one only fails when a token past it occurs (said then, naming the token). A
// vocabulary of more than twice the table plus the 256 byte tokens cannot be the model's: refused
// before minutes of building it.
Status checkVocabSize(const std::string& file, const std::string& where, std::int64_t entries, const TokenizerLimits& limits) {
  if (limits.vocab <= 0 || entries <= 2 * limits.vocab + 256) return Ok{};
  return makeError("'" + file + "' has " + std::to_string(entries) + " tokens in " + where + ", more than twice the model's "
                   "vocabulary of " + std::to_string(limits.vocab) + " (vocab_size in config.json) plus the 256 byte "
                   "tokens: it is not this model's tokenizer");
}

}  // namespace

// Measured with /usr/bin/time -f %M on `mhascope info --model DIR --text a` (Xeon, 2 cores) for
// generated tokenizer.json files of 2^16, 2^18 and 2^20 tokens (1.2, 5.0 and 20.8 MB): the peak
// grew by 21.5, 21.0 and 20.4 times the file's size over the 11.8 MB of a folder with a tiny one;
// 24 leaves about a tenth more.
std::uint64_t estimateTokenizerBytes(std::uint64_t fileBytes) { return 24 * fileBytes; }

bool hasTokenizerFiles(const std::string& dir) {
  std::error_code ec;
  const fs::path d(dir);
  return fs::exists(d / "tokenizer.json", ec) || (fs::exists(d / "vocab.json", ec) && fs::exists(d / "merges.txt", ec));
}

Result<BpeTokenizer> loadTokenizer(const std::string& path, const TokenizerLimits& limits) {
  std::error_code ec;
  const bool isDir = fs::is_directory(path, ec);
  const std::string dir = isDir ? path : fs::path(path).parent_path().string();
  const std::string json = isDir ? (fs::path(path) / "tokenizer.json").string() : path;
  if (!isDir || fs::exists(json, ec)) {
    if (auto st = checkBudget({json}, limits); !st) return st.error();
    auto bytes = readTokenizerFile(json, kMaxTokenizerFileBytes);
    if (!bytes) return bytes.error();
    if (limits.vocab > 0) {
      if (auto st = checkVocabSize(json, "model.vocab", countEntries(*bytes, {"", "model", "vocab"}), limits); !st) return st.error();
    }
    return BpeTokenizer::fromTokenizerJson(*bytes, "'" + json + "'");
  }
  const std::string vocab = (fs::path(dir) / "vocab.json").string();
  const std::string merges = (fs::path(dir) / "merges.txt").string();
  if (!hasTokenizerFiles(dir)) {
    return makeError("'" + path + "' holds no tokenizer: neither tokenizer.json nor vocab.json + merges.txt");
  }
  if (auto st = checkBudget({vocab, merges}, limits); !st) return st.error();
  auto vocabBytes = readTokenizerFile(vocab, kMaxTokenizerFileBytes);
  if (!vocabBytes) return vocabBytes.error();
  if (limits.vocab > 0) {
    if (auto st = checkVocabSize(vocab, "the file", countEntries(*vocabBytes, {""}), limits); !st) return st.error();
  }
  auto mergesBytes = readTokenizerFile(merges, kMaxTokenizerFileBytes);
  if (!mergesBytes) return mergesBytes.error();
  return BpeTokenizer::fromVocabAndMerges(*vocabBytes, "'" + vocab + "'", *mergesBytes, "'" + merges + "'");
}

}  // namespace mhascope::tokenize
