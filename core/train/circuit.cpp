// The induction circuit check and the roles lesson of one run.
#include "train/circuit.hpp"

#include <cstdio>

namespace mhascope::train {
namespace {

std::string headName(int layer, int head) { return "layer " + std::to_string(layer) + " head " + std::to_string(head); }

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string since(std::int64_t step) { return step < 0 ? std::string() : " since step " + std::to_string(step); }

}  // namespace

CircuitCheck inductionCircuit(const Evaluation& e) {
  CircuitCheck c;
  c.loss = e.loss;
  if (!e.complete()) return c;  // no scores: nothing formed, nothing to index
  for (int i = 0; i < e.heads && e.layers > 0; ++i) {
    if (c.prevHead < 0 || e.at(0, i).prevToken > c.prev) {
      c.prev = e.at(0, i).prevToken;
      c.prevHead = i;
    }
    if (e.layers > 1 && (c.inductionHead < 0 || e.at(1, i).induction > c.induction)) {
      c.induction = e.at(1, i).induction;
      c.inductionHead = i;
    }
  }
  c.formed = e.layers > 1 && c.loss < 0.5 && c.prev > kRoleThreshold && c.induction > kRoleThreshold;
  return c;
}

std::int64_t circuitFormedAt(const std::vector<Evaluation>& history, std::size_t upTo) {
  for (std::size_t i = 0; i < history.size() && i <= upTo; ++i) {
    if (inductionCircuit(history[i]).formed) return history[i].step;
  }
  return -1;
}

std::int64_t firstStepAbove(const std::vector<Evaluation>& history, std::size_t upTo, int layer, int head,
                            double HeadScores::*score) {
  for (std::size_t i = 0; i < history.size() && i <= upTo; ++i) {
    const Evaluation& e = history[i];
    if (e.complete() && layer >= 0 && head >= 0 && layer < e.layers && head < e.heads && e.at(layer, head).*score >= kRoleThreshold) return e.step;
  }
  return -1;
}

std::vector<std::string> circuitLesson(const std::vector<Evaluation>& history, std::size_t upTo, TaskKind task) {
  std::vector<std::string> out;
  if (history.empty()) return out;
  if (upTo >= history.size()) upTo = history.size() - 1;
  const Evaluation& e = history[upTo];
  if (!e.complete()) return out;
  const std::string at = "At step " + std::to_string(e.step) + " ";
  if (task == TaskKind::Reverse) {
    out.push_back(at + "(reverse): after SEP each position must copy the token mirrored around SEP, so look for an "
                  "anti-diagonal in some head's weights right of SEP. Probe loss " + fixed2(e.loss) + ".");
    return out;
  }
  if (task == TaskKind::Sort) {
    out.push_back(at + "(sort): after SEP each output must find the next-larger input token, so heads attend to the "
                  "first half by token value, not by position. Probe loss " + fixed2(e.loss) + ".");
    return out;
  }
  if (task == TaskKind::Text) {
    out.push_back(at + "(text): next-character prediction mixes previous-token heads (spelling) with heads that look "
                  "further back; roles below. Probe loss " + fixed2(e.loss) + ".");
    return out;
  }
  const CircuitCheck c = inductionCircuit(e);
  if (e.layers < 2) {
    out.push_back("One layer is the control: predicting a repeat needs to find where the current token occurred "
                  "before and read the token AFTER it. A single attention layer sees only the tokens themselves (and "
                  "their positions), not what preceded each key, so no head can point at \"the key after the earlier "
                  "copy\" — the loss stays high and no head becomes an induction head.");
    out.push_back(at + "the best previous-token head is " + headName(0, c.prevHead) + " (" + fixed2(c.prev) +
                  "); probe loss " + fixed2(e.loss) + ". Add a second layer to see the circuit form.");
    return out;
  }
  const std::int64_t prevSince = firstStepAbove(history, upTo, 0, c.prevHead, &HeadScores::prevToken);
  const std::int64_t indSince = firstStepAbove(history, upTo, 1, c.inductionHead, &HeadScores::induction);
  const std::int64_t formed = circuitFormedAt(history, upTo);
  std::string p = at;
  if (c.prev >= kRoleThreshold) {
    p += headName(0, c.prevHead) + " is a previous-token head (" + fixed2(c.prev) + since(prevSince) +
         "): each position copies in the token before it, so after layer 0 every key also carries \"who came before me\".";
  } else {
    p += "no layer-0 head attends to the previous token yet (best: " + headName(0, c.prevHead) + ", " + fixed2(c.prev) +
         ").";
  }
  out.push_back(p);
  std::string q;
  if (c.induction >= kRoleThreshold) {
    q = headName(1, c.inductionHead) + " is an induction head (" + fixed2(c.induction) + since(indSince) +
        "): its query (the current token) matches the key whose PREVIOUS token is the same — information only "
        "the previous-token head put there — so it attends to the token right after the earlier copy and predicts it.";
  } else {
    q = "No layer-1 head is an induction head yet (best: " + headName(1, c.inductionHead) + ", " + fixed2(c.induction) +
        "): it needs the previous-token head's output to find the token after the earlier copy.";
  }
  out.push_back(q);
  if (formed >= 0) {
    out.push_back("The circuit formed at step " + std::to_string(formed) + " (probe loss < 0.5 with both heads above " +
                  fixed2(kRoleThreshold) + "): the loss drops when the two heads lock in together — the phase change. "
                  "Switch " + headName(0, c.prevHead) + " off in the table above and the induction head loses its target.");
  } else {
    out.push_back("The circuit has not formed yet (probe loss " + fixed2(e.loss) +
                  ", needs < 0.5 with both scores above " + fixed2(kRoleThreshold) + ").");
  }
  return out;
}

}  // namespace mhascope::train
