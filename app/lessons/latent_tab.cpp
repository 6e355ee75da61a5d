// The Latent attention tab — DeepSeek's multi-head latent attention on this sentence: the latent's
// width r and the rotary key's d_r chosen, what is cached per token against MHA, GQA and MQA, the
// expanded and absorbed weights of one head side by side with their difference, and DeepSeek's
// published configurations.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "lessons/lesson_tab.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

namespace {

void cacheTable(const LatentLesson& r) {
  if (!ImGui::BeginTable("latent_cache", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
  ImGui::TableSetupColumn("cached per token and layer");
  ImGui::TableSetupColumn("numbers");
  ImGui::TableSetupColumn("16-bit bytes");
  ImGui::TableHeadersRow();
  for (const LatentCacheRow& row : r.cache) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(row.kind.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(row.numbers).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(2.0 * static_cast<double>(row.numbers)).c_str());
  }
  ImGui::EndTable();
}

void publishedTable(const LatentLesson& r) {
  if (!beginPublishedTable("latent_published", {"model", "layers", "h", "r", "d_r", "d_n + d_v",
                                                  "cache / token (16-bit, all layers)", "MHA with the same heads"},
                           r.published.size()))
    return;
  for (const PublishedLatent& p : r.published) {
    LatentSizes s;
    s.heads = p.heads;
    s.kvRank = p.kvRank;
    s.ropeDim = p.ropeDim;
    s.nopeDim = p.nopeDim;
    s.valueDim = p.valueDim;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.name);
    for (int v : {p.layers, p.heads, p.kvRank, p.ropeDim}) {
      ImGui::TableNextColumn();
      ImGui::Text("%d", v);
    }
    ImGui::TableNextColumn();
    ImGui::Text("%d + %d", p.nopeDim, p.valueDim);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(2.0 * p.layers * static_cast<double>(s.cachedPerToken())).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(2.0 * p.layers * static_cast<double>(s.expandedPerToken())).c_str());
  }
  ImGui::EndTable();
}

}  // namespace

// Over 60 lines on purpose: one tab drawn top to bottom in reading order — the choices, the cache,
// the two forms' pictures, the published models — every part using the result fetched at the top.
void drawLatentTab(UiContext& ctx, const LessonOutcome<LatentLesson>& outcome, lessons::Latent::Choices& pick) {
  lessonHeader(ctx, "Latent attention: caching one latent instead of keys and values", latentLessonIntro());
  if (!rerunLessonReady<lessons::Latent>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  pick.keepInRange(t);
  ImGui::SetNextItemWidth(12 * em);
  if (dragSliderInt("##rank", &pick.kvRank, 1, 256, "latent r = %d").changed) pick.keepInRange(t);
  recordSliderFrame(ctx, "latent_rank", 12 * em);
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(12 * em);
  if (dragSliderInt("##rope", &pick.ropeDim, 2, 64, "rotary d_r = %d").changed) pick.keepInRange(t);
  recordSliderFrame(ctx, "latent_rope", 12 * em);
  if (!lessonOk(outcome)) return;
  const LatentLesson* r = outcome.get();

  cacheTable(*r);
  const std::string cache = latentCacheText(*r);
  textWrapped(cache);
  ctx.probes.recordLabel("latent_cache", cache);

  ImGui::Separator();
  const int head = std::clamp(ctx.view.head, 0, r->sizes.heads - 1);
  textWrapped(formatText("Head %d (picked in the Heatmap tab) on this sentence, with random latent weights (d_n = d_v "
                         "= d_k = %d): the weights made the expanded way and the absorbed way.",
                         head, r->sizes.nopeDim));
  const float avail = ImGui::GetContentRegionAvail().x;
  const float labelsW = 4.5f * em;
  const float side = std::clamp((avail - colorbarWidth() - 2.0f * (labelsW + em)) / 2.0f, 7.0f * em, 14.0f * em);
  const int T = static_cast<int>(r->result.weights.dim(1));
  const Tensor* forms[2] = {&r->result.weights, &r->result.weightsAbsorbed};
  const char* titles[2] = {"expanded: k_nope, v made per token", "absorbed: q W_uk^T against the latents"};
  for (int i = 0; i < 2; ++i) {
    ImGui::PushID(i);
    if (i) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextUnformatted(titles[i]);
    MatrixPicture m;
    m.data = forms[i]->ptr() + static_cast<std::size_t>(head) * static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
    m.rows = T;
    m.cols = T;
    m.rowLabels = r->tokens;
    m.colLabels = r->tokens;
    m.head = head;
    m.textureTag = 805306368 + 2 * pick.variant() + i;  // this tab's own range; the head is in the key
    m.colorbar = i == 1;
    m.numbers = T <= 8;
    drawMatrix(ctx, "w", m, ImVec2(side + labelsW + (m.colorbar ? colorbarWidth() : 0.0f), side + 4.5f * em));
    ImGui::EndGroup();
    ImGui::PopID();
  }
  const std::string absorbed = latentAbsorbedText(*r);
  textWrapped(absorbed);
  ctx.probes.recordLabel("latent_absorbed", absorbed);

  ImGui::Separator();
  ImGui::TextUnformatted("DeepSeek's published configurations (config.json), the cache of one token in every layer:");
  publishedTable(*r);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/latent.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Latent::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawLatentTab(ui, shown, choices);
}
template void mhascope::lessons::Latent::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
