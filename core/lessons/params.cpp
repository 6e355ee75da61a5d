// Params — where the parameters go: the lesson's words (its numbers are parameterTable()'s).
#include "lessons/params.hpp"

namespace mhascope {

const char* lessons::Params::intro() {
  return "If every head had its own full d_model-wide projections, Q, K and V would cost h times more. Each head "
         "projects to only d_k features instead, usually d_k = d_model / h, so h query heads together need one "
         "d_model x d_model W_q (d_model x h*d_k when a model sets d_k otherwise), and N K/V heads one d_model x "
         "N*d_k W_k and W_v each. With N = h (multi-head attention) the "
         "number of heads does not change the parameter count; with fewer K/V heads kept, more query heads make "
         "W_k and W_v narrower, since N*d_k = N*d_model/h.";
}

}  // namespace mhascope
