// The fixture model folders the model tests open (tests/fixtures/models, made by the fixtures script).
#pragma once

#include <string>

namespace mhascope::model {

inline const std::string kModels = std::string(MHASCOPE_FIXTURES_DIR) + "/models/";

}  // namespace mhascope::model
