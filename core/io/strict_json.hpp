// Strict JSON parsing for every file mhascope reads back (presets, sessions, workspaces):
// nlohmann keeps the last of duplicate keys silently and nests without limit, so both are refused
// while parsing, with the file named in the message.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace mhascope {

// Duplicate keys and nesting deeper than 32 levels are errors: "<what>: duplicate key 'x'",
// "<what>: not valid JSON: …".
Result<nlohmann::json> parseStrictJson(std::string_view text, const std::string& what);
// "null" for null (NaN and Inf are saved as null), else nlohmann's type name ("number", "string" …).
std::string jsonTypeName(const nlohmann::json& j);

}  // namespace mhascope
