// Strict JSON parsing (see strict_json.hpp).
#include "io/strict_json.hpp"

#include <set>
#include <vector>

namespace mhascope {
namespace {

using nlohmann::json;

struct JsonError {
  std::string message;
};

}  // namespace

Result<json> parseStrictJson(std::string_view text, const std::string& what) {
  std::vector<std::set<std::string>> keyStack;
  constexpr std::size_t kMaxDepth = 32;
  try {
    json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
      if (static_cast<std::size_t>(depth) > kMaxDepth) {
        throw JsonError{what + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels"};
      }
      switch (event) {
        case json::parse_event_t::object_start: keyStack.emplace_back(); break;
        case json::parse_event_t::object_end:
          if (!keyStack.empty()) keyStack.pop_back();
          break;
        case json::parse_event_t::key: {
          const auto key = parsed.get<std::string>();
          if (!keyStack.empty() && !keyStack.back().insert(key).second) {
            throw JsonError{what + ": duplicate key '" + key + "'"};
          }
          break;
        }
        default: break;
      }
      return true;
    };
    return json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true);
  } catch (const JsonError& e) {
    return makeError(e.message);
  } catch (const json::exception& e) {
    return makeError(what + ": not valid JSON: " + e.what());
  }
}

std::string jsonTypeName(const json& j) {
  if (j.is_null()) return "null";
  return j.type_name();
}

}  // namespace mhascope
