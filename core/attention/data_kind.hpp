// What a table's numbers are, which picks its colormap (signed → diverging about 0, weights →
// sequential). Its own header so that colour code needs no trace to name it.
#pragma once

namespace mhascope {

enum class DataKind { Signed, Probability };

}  // namespace mhascope
