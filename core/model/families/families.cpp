// The one list of model families (see families.hpp). A family is a file of its own in this folder that
// defines `const Family <model_type>`; adding one is that file and one line here.
#include "model/families/families.hpp"

namespace mhascope::model {

// One line per family, in the order messages list them.
#define MHASCOPE_MODEL_FAMILIES(FAMILY) \
  FAMILY(gpt2)                          \
  FAMILY(llama)                         \
  FAMILY(mistral)                       \
  FAMILY(qwen2)                         \
  FAMILY(phi3)                          \
  FAMILY(smollm3)                       \
  FAMILY(qwen3)                         \
  FAMILY(olmo2)                         \
  FAMILY(gemma2)                        \
  FAMILY(gemma3_text)                   \
  FAMILY(mixtral)                       \
  FAMILY(qwen3_moe)                     \
  FAMILY(gpt_oss)                       \
  FAMILY(deepseek_v2)                   \
  FAMILY(deepseek_v3)

namespace families {
#define MHASCOPE_DECLARE_FAMILY(id) extern const Family id;
MHASCOPE_MODEL_FAMILIES(MHASCOPE_DECLARE_FAMILY)
#undef MHASCOPE_DECLARE_FAMILY
}  // namespace families

namespace {
#define MHASCOPE_LIST_FAMILY(id) &families::id,
constexpr const Family* kFamilies[] = {MHASCOPE_MODEL_FAMILIES(MHASCOPE_LIST_FAMILY)};
#undef MHASCOPE_LIST_FAMILY
}  // namespace

std::span<const Family* const> allFamilies() { return kFamilies; }

const Family* findFamily(std::string_view modelType) {
  for (const Family* f : kFamilies) {
    if (modelType == f->modelType) return f;
  }
  return nullptr;
}

std::string familyTypes(const char* lastSeparator) {
  std::string out;
  const std::size_t n = std::size(kFamilies);
  for (std::size_t i = 0; i < n; ++i) {
    out += (i == 0 ? "" : i + 1 == n ? lastSeparator : ", ") + std::string(kFamilies[i]->modelType);
  }
  return out;
}

std::string familyNames() {
  std::string out;
  const std::size_t n = std::size(kFamilies);
  for (std::size_t i = 0; i < n; ++i) {
    out += (i == 0 ? "" : i + 1 == n ? " and " : ", ") + std::string(kFamilies[i]->displayName);
  }
  return out;
}

}  // namespace mhascope::model
