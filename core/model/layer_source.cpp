// layerAttention (layer_source.hpp): the model's forward up to layer L, through the same steps as
// runForward (forward_steps.hpp), then layer L's first norm as the engine's inputs.
#include "model/layer_source.hpp"

#include <new>
#include <string>

#include "model/families/family.hpp"
#include "model/forward_steps.hpp"

namespace mhascope::model {

Result<LayerAttention> layerAttention(const ModelFolder& model, const std::vector<int>& tokens, int layer,
                                      const ForwardOptions& opt) {
  const ModelSpec& spec = model.spec();
  if (layer < 0 || layer >= spec.layers) {
    return makeError("layer " + std::to_string(layer) + " is outside the model's " + std::to_string(spec.layers) +
                     " layers (0 .. " + std::to_string(spec.layers - 1) + ", " +
                     spec.family->key(SpecField::Layers) + " in " + model.dir() +
                     "/config.json)");
  }
  // The engine projects the stream by W_q, W_k and W_v; a latent layer has none (its keys come through a normed
  // latent), so it is refused rather than run as something it is not: its pass is the forward's record.
  if (spec.latent.enabled()) return makeError(latentRerunRefusal(spec, layer));
  // The layers before L keep nothing: the caller records layer L's attention itself (one trace, as
  // runForward's traced layer), and no logits are made.
  ForwardOptions run = opt;
  run.keepAttention = false;
  run.keepHidden = false;
  run.traceLayer = -1;
  ForwardOptions counted = run;
  counted.traceLayer = layer;
  const double estimate = detail::forwardBytes(spec, static_cast<std::int64_t>(tokens.size()), counted, false);
  try {
    detail::ForwardState st;
    if (auto s = detail::startForward(model, tokens, run, estimate, st); !s) return s.error();
    ForwardResult unused;
    if (auto s = detail::runLayers(model, layer, run, st, unused); !s) return s.error();
    auto lw = model.layer(layer);
    if (!lw) return lw.error();
    detail::attentionInput(spec, *lw, layer, st);
    LayerAttention la;
    la.inputs = std::move(st.in);
    la.weights = std::move(lw->attention);
    la.options = std::move(st.options);
    la.options.recordEveryStage = true;
    la.layer = layer;
    return la;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the forward of " + std::to_string(tokens.size()) +
                     " tokens up to layer " + std::to_string(layer) + " (estimated " + formatBytes(estimate) + ")");
  }
}

std::string latentRerunRefusal(const ModelSpec& spec, int layer) {
  return std::string(spec.family->displayName) + "'s layer " + std::to_string(layer) +
         " is multi-head latent attention (q/kv_a_proj, kv_a_layernorm, kv_b_proj): the pipeline shows the pass the "
         "model's own forward recorded, but re-running the layer with changed weights or options needs W_q, W_k, W_v "
         "attention, which it is not (nor has it such weights to save or edit); info --model shows its cache and the "
         "absorbed form's check";
}

}  // namespace mhascope::model
