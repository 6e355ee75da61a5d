// The one table of subcommands (commands.hpp).
#include "commands.hpp"

namespace mhascope::cli {

std::span<const Command> commands() {
  static const Command kCommands[] = {
      {"info", "shape trace table, parameter counts, FLOPs, score memory", true, addInfoCommand},
      {"run", "run the model and dump every stage as .npy + trace.json", true, addRunCommand},
      {"export", "export a stage's heatmap as PNG, SVG or PDF", true, addExportCommand},
      {"bench", "time one forward with full recording against the engine's GEMM (--train: training)", true,
       addBenchCommand},
      {"train", "train a tiny transformer on a task and watch its heads take roles", false, addTrainCommand},
      {"circuits",
       "what a trained model's heads compute: QK/OV circuits, composition between layers, copying scores, the "
       "attention rollout (a checkpoint, or a model folder's head with --model)",
       false, addCircuitsCommand},
      {"decode",
       "generate through a KV cache: prefill P tokens, then one at a time (bytes and FLOPs per step; equals run --mask "
       "causal)",
       true, addDecodeCommand},
      {"compare", "one stage of two models side by side and their difference B − A (side A: the MODEL options; side B: --b-*)",
       true, addCompareCommand},
      {"predict", "a model folder's next-token predictions on your text, and the logit lens", false,
       addPredictCommand},
      {"patch", "activation patching on a model folder: which sites restore the clean answer in the corrupted run "
       "(or break it, --direction noise), per layer and position or head", false, addPatchCommand},
      {"attribute", "direct logit attribution: what each head and MLP adds to logit[answer] − logit[wrong] at the last "
       "position; or, with --why L.H, why a head attends where it does (its score split into query-side × key-side "
       "terms)", false, addAttributeCommand},
      {"tokens", "how a tokenizer reads your text: each token's position, id and piece (a model folder's, or a "
       "tokenizer.json)", false, addTokensCommand},
      {"practice",
       "implement attention yourself: list, show and start an exercise, check your file stage by stage (which stage "
       "differs first, and the known mistake it equals)",
       false, addPracticeCommand},
  };
  return kCommands;
}

std::string commandNames() {
  std::string s;
  for (const Command& c : commands()) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

}  // namespace mhascope::cli
