// What the two tokenizer file readers share (tokenizer_json.cpp: Hugging Face's tokenizer.json;
// tokenizer_vocab_merges.cpp: GPT-2's vocab.json + merges.txt): the strict JSON parse, the small
// value readers whose refusals name the place in the file, the vocabulary object and a merge written
// "a b". Internal to mhascope_tokenize.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "util/result.hpp"

namespace mhascope::tokenize::load_detail {

using nlohmann::json;

// The file's size against kMaxTokenizerFileBytes, refused with both numbers.
Status checkFileSize(std::string_view bytes, const std::string& file);

// nlohmann keeps the last of duplicate keys silently and nests without limit: a vocabulary with
// a key twice would lose one id unseen, so both are refused while parsing. (mhascope_core has the
// same rule in io/strict_json; this module does not link mhascope_core.)
Result<json> parseJson(std::string_view text, const std::string& file);

std::string typeName(const json& j);
// A JSON value as a short quoted text for messages ("'NFC'", "42"), cut at 60 bytes.
std::string shown(const json& j);
// A text from the file, quoted and cut at 60 bytes, for messages.
std::string shownText(std::string_view s);

const json* member(const json& obj, const char* key);
bool isNullOrAbsent(const json* j);
Result<bool> optionalBool(const json& obj, const char* key, bool fallback, const std::string& where);
// A string member, or an error naming it.
Result<std::string> stringMember(const json& obj, const char* key, const std::string& where);
Result<std::int32_t> tokenIdValue(const json& j, const std::string& where);

// The vocabulary object, spelling → id, both ways; an empty token or an id given twice is refused.
Status readVocab(const json& vocab, const std::string& where,
                 std::unordered_map<std::string, std::int32_t>& spellingToId,
                 std::unordered_map<std::int32_t, std::string>& idToSpelling);

// A merge written "a b" (merges.txt's lines, tokenizer.json's string merges): its two tokens.
Result<std::pair<std::string_view, std::string_view>> mergePair(std::string_view text, const std::string& where);

}  // namespace mhascope::tokenize::load_detail
