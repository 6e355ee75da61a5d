// What the two tokenizer file readers share: the strict JSON parse, the small value readers, the
// vocabulary object and a merge written "a b" (declared in tokenizer_load_common.hpp).
#include "tokenize/tokenizer_load_common.hpp"

#include <set>
#include <vector>

#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize::load_detail {
namespace {

struct ParseFailure {
  std::string message;
};

}  // namespace

Status checkFileSize(std::string_view bytes, const std::string& file) {
  if (bytes.size() > kMaxTokenizerFileBytes) {
    return makeError(file + ": " + std::to_string(bytes.size()) + " bytes; a tokenizer file may hold at most " +
                     std::to_string(kMaxTokenizerFileBytes) + " bytes (64 MiB)");
  }
  return Ok{};
}

Result<json> parseJson(std::string_view text, const std::string& file) {
  if (auto st = checkFileSize(text, file); !st) return st.error();
  std::vector<std::set<std::string>> keys;
  constexpr int kMaxDepth = 32;
  try {
    json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth > kMaxDepth) throw ParseFailure{file + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels"};
      if (event == json::parse_event_t::object_start) {
        keys.emplace_back();
      } else if (event == json::parse_event_t::object_end) {
        if (!keys.empty()) keys.pop_back();
      } else if (event == json::parse_event_t::key) {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys.empty() && !keys.back().insert(key).second) {
          throw ParseFailure{file + ": duplicate key '" + key + "'"};
        }
      }
      return true;
    };
    return json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true);
  } catch (const ParseFailure& f) {
    return makeError(f.message);
  } catch (const json::exception& e) {
    return makeError(file + ": not valid JSON: " + e.what());
  }
}

std::string typeName(const json& j) { return j.is_null() ? "null" : j.type_name(); }

std::string shown(const json& j) {
  std::string s = j.is_string() ? quote(j.get_ref<const std::string&>()) : j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return replaceInvalidUtf8(s);
}

std::string shownText(std::string_view s) {
  std::string out(s.substr(0, 60));
  if (s.size() > 60) out += "...";
  return quote(replaceInvalidUtf8(out));
}

const json* member(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

bool isNullOrAbsent(const json* j) { return j == nullptr || j->is_null(); }

Result<bool> optionalBool(const json& obj, const char* key, bool fallback, const std::string& where) {
  const json* j = member(obj, key);
  if (isNullOrAbsent(j)) return fallback;
  if (!j->is_boolean()) return makeError(where + "." + key + " is " + typeName(*j) + ", expected true or false");
  return j->get<bool>();
}

Result<std::string> stringMember(const json& obj, const char* key, const std::string& where) {
  const json* j = member(obj, key);
  if (j == nullptr) return makeError(where + "." + key + " is missing");
  if (!j->is_string()) return makeError(where + "." + key + " is " + typeName(*j) + " " + shown(*j) + ", expected a string");
  return j->get<std::string>();
}

Result<std::int32_t> tokenIdValue(const json& j, const std::string& where) {
  if (!j.is_number_integer()) return makeError(where + " is " + typeName(j) + " " + shown(j) + ", expected an integer token id");
  const auto v = j.get<std::int64_t>();
  if (j.is_number_unsigned() ? j.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxTokenId)
                             : (v < 0 || v > kMaxTokenId)) {
    return makeError(where + " is " + j.dump() + ", outside 0 … " + std::to_string(kMaxTokenId));
  }
  return static_cast<std::int32_t>(v);
}

Status readVocab(const json& vocab, const std::string& where,
                 std::unordered_map<std::string, std::int32_t>& spellingToId,
                 std::unordered_map<std::int32_t, std::string>& idToSpelling) {
  if (!vocab.is_object()) return makeError(where + " is " + typeName(vocab) + ", expected an object of token → id");
  if (vocab.size() > kMaxVocabTokens) {
    return makeError(where + " holds " + std::to_string(vocab.size()) + " tokens; at most " +
                     std::to_string(kMaxVocabTokens) + " are supported");
  }
  spellingToId.reserve(vocab.size());
  idToSpelling.reserve(vocab.size());
  for (const auto& [spelling, value] : vocab.items()) {
    const std::string at = where + "[" + shownText(spelling) + "]";
    if (spelling.empty()) return makeError(where + " has an empty token");
    auto id = tokenIdValue(value, at);
    if (!id) return id.error();
    const auto [it, fresh] = idToSpelling.emplace(*id, spelling);
    if (!fresh) {
      return makeError(where + ": id " + std::to_string(*id) + " is given to both " + shownText(it->second) +
                       " and " + shownText(spelling));
    }
    spellingToId.emplace(spelling, *id);
  }
  return Ok{};
}

Result<std::pair<std::string_view, std::string_view>> mergePair(std::string_view text, const std::string& where) {
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == text.size() ||
      text.find(' ', space + 1) != std::string_view::npos) {
    return makeError(where + ": " + shownText(text) + " is not two tokens separated by one space");
  }
  return std::pair{text.substr(0, space), text.substr(space + 1)};
}

}  // namespace mhascope::tokenize::load_detail
