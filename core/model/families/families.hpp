// The model families mhascope opens: the one list (families.cpp), found by config.json's model_type.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "model/families/family.hpp"

namespace mhascope::model {

// Every family, in the order messages list them.
std::span<const Family* const> allFamilies();
// The family of a model_type, or nullptr.
const Family* findFamily(std::string_view modelType);
// The model_types joined: "gpt2, llama, mistral, qwen2" (`lastSeparator` before the last: ", " or " or ").
std::string familyTypes(const char* lastSeparator = ", ");
// The display names joined: "GPT-2, Llama, Mistral and Qwen2".
std::string familyNames();

}  // namespace mhascope::model
