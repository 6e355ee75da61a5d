// The GQA / MQA tab — N K/V heads for h query heads: the slider over the divisors of h, who reads
// which K/V head (a diagram coloured by group), the weights and KV-cache bytes live, published
// models' sizes, and the engine's weights with N K/V heads beside those with N = h.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

namespace {

// Query heads on top, K/V heads below, a line from each query head to the K/V head it reads; the
// colour is the group's (its K/V head's).
void drawGroupDiagram(UiContext& ctx, const GqaLesson& r, float width) {
  const float em = ImGui::GetFontSize();
  const int h = r.heads, N = r.kvHeads;
  const float box = std::clamp(width / static_cast<float>(h) - 0.3f * em, 0.6f * em, 2.2f * em);
  const float rowGap = 3.0f * em;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  auto centreX = [&](int i, int n) { return origin.x + (static_cast<float>(i) + 0.5f) * width / static_cast<float>(n); };
  const float qy = origin.y + 1.2f * em, ky = qy + box + rowGap;
  dl->AddText(ImVec2(origin.x, origin.y), ImGui::GetColorU32(ImGuiCol_Text), "query heads (h), coloured by K/V head");
  for (int i = 0; i < h; ++i) {
    const int g = r.kvHeadOf[static_cast<std::size_t>(i)];
    const float x = centreX(i, h);
    dl->AddLine(ImVec2(x, qy + box), ImVec2(centreX(g, N), ky), headColor(g, 0.8f), 2.0f);
    dl->AddRectFilled(ImVec2(x - box / 2, qy), ImVec2(x + box / 2, qy + box), headColor(g, 0.85f), 3.0f);
    if (box >= 1.2f * em) {
      const std::string label = std::to_string(i);
      dl->AddText(ImVec2(x - ImGui::CalcTextSize(label.c_str()).x / 2, qy + (box - em) / 2), IM_COL32(0, 0, 0, 255),
                  label.c_str());
    }
  }
  for (int g = 0; g < N; ++g) {
    const float x = centreX(g, N), w = std::max(box, std::min(width / static_cast<float>(N) - 0.3f * em, 5.0f * em));
    dl->AddRectFilled(ImVec2(x - w / 2, ky), ImVec2(x + w / 2, ky + box), headColor(g), 3.0f);
    const std::string label = "K/V " + std::to_string(g);
    if (ImGui::CalcTextSize(label.c_str()).x < w) {
      dl->AddText(ImVec2(x - ImGui::CalcTextSize(label.c_str()).x / 2, ky + (box - em) / 2), IM_COL32(0, 0, 0, 255),
                  label.c_str());
    }
  }
  dl->AddText(ImVec2(origin.x, ky + box + 0.2f * em), ImGui::GetColorU32(ImGuiCol_Text), "K/V heads (N)");
  ImGui::Dummy(ImVec2(width, ky + box + 1.4f * em - origin.y));
  ctx.probes.recordRect("gqa_diagram", origin, ImVec2(origin.x + width, ky + box));
}

void sizesTable(const GqaLesson& r) {
  if (!ImGui::BeginTable("sizes", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
  ImGui::TableSetupColumn("matrix");
  ImGui::TableSetupColumn("shape");
  ImGui::TableSetupColumn(("weights, N = " + std::to_string(r.kvHeads)).c_str());
  ImGui::TableSetupColumn("N = h (MHA)");
  ImGui::TableHeadersRow();
  const std::string d = std::to_string(r.dModel), q = std::to_string(r.heads * r.dk), kv = std::to_string(r.kvHeads * r.dk);
  auto row = [](const std::string& name, const std::string& shape, const std::string& now, const std::string& mha) {
    ImGui::TableNextRow();
    for (const std::string* s : {&name, &shape, &now, &mha}) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(s->c_str());
    }
  };
  row("W_q", d + " x " + q, formatCount(r.params.wq), formatCount(r.mhaParams.wq));
  row("W_k", d + " x " + kv + " (N*d_k)", formatCount(r.params.wk), formatCount(r.mhaParams.wk));
  row("W_v", d + " x " + kv + " (N*d_k)", formatCount(r.params.wv), formatCount(r.mhaParams.wv));
  row("W_o", q + " x " + d, formatCount(r.params.wo), formatCount(r.mhaParams.wo));
  row("all four", "", formatCount(r.params.weights()), formatCount(r.mhaParams.weights()));
  row("KV cache / token", "2*L*N*d_k*bytes", formatBytes(static_cast<double>(r.kvBytesPerToken)),
      formatBytes(static_cast<double>(r.mhaKvBytesPerToken)));
  ImGui::EndTable();
}

void publishedTable(const GqaLesson& r) {
  if (!beginPublishedTable("published", {"model", "layers", "d_model", "h", "N", "d_k", "h/N",
                                         "attention weights / layer", "KV cache / token (16-bit)", "with N = h"},
                           r.published.size()))
    return;
  for (const PublishedRow& p : r.published) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.model.name);
    for (int v : {p.model.layers, p.model.dModel, p.model.heads, p.model.kvHeads, p.dk, p.groupSize}) {
      ImGui::TableNextColumn();
      ImGui::Text("%d", v);
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(p.params.weights()).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(static_cast<double>(p.kvBytesPerToken)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatBytes(static_cast<double>(p.mhaKvBytesPerToken)).c_str());
  }
  ImGui::EndTable();
}

}  // namespace

// Over 80 lines on purpose: one tab drawn top to bottom in reading order — the choices, the diagram
// and sizes, the engine's pictures, the published models — every part using the result fetched at the top.
void drawGqaTab(UiContext& ctx, const LessonOutcome<GqaLesson>& outcome, lessons::Gqa::Choices& pick) {
  lessonHeader(ctx, "GQA / MQA: query heads sharing K/V heads", gqaLessonIntro());
  if (!rerunLessonReady<lessons::Gqa>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  // N moves over the divisors of h only: a dragged or typed value lands on the nearest one.
  pick.keepInRange(t);
  const char* kind = pick.kvHeads == t.heads ? "N = %d K/V heads (MHA)" : pick.kvHeads == 1 ? "N = %d K/V head (MQA)"
                                                                                           : "N = %d K/V heads (GQA)";
  ImGui::SetNextItemWidth(14 * em);
  if (dragSliderInt("##kv", &pick.kvHeads, 1, std::max(1, t.heads), kind).changed) pick.keepInRange(t);
  recordSliderFrame(ctx, "gqa_kv_heads", 14 * em);
  ImGui::SameLine(0, em);
  ImGui::SetNextItemWidth(10 * em);
  dragSliderInt("layers", &pick.layers, 1, 256);
  recordSliderFrame(ctx, "gqa_layers", 10 * em);
  ImGui::SameLine(0, em);
  ImGui::RadioButton("16-bit", &pick.bytes, 2);
  ctx.probes.recordLastItem("gqa_16bit");
  ImGui::SameLine();
  ImGui::RadioButton("32-bit", &pick.bytes, 4);
  ctx.probes.recordLastItem("gqa_32bit");
  if (!lessonOk(outcome)) return;
  const GqaLesson* r = outcome.get();

  const float avail = ImGui::GetContentRegionAvail().x;
  // The diagram as wide as its heads need, the sizes table beside it (below it when too narrow).
  const float diagramW = std::clamp(2.6f * em * static_cast<float>(r->heads), 16.0f * em, 0.45f * avail);
  ImGui::BeginGroup();
  drawGroupDiagram(ctx, *r, diagramW);
  ImGui::EndGroup();
  if (avail - diagramW > 30.0f * em) ImGui::SameLine(0, 1.5f * em);
  ImGui::BeginGroup();
  sizesTable(*r);
  ImGui::EndGroup();
  const std::string sharing = gqaSharingText(*r);
  textWrapped(sharing);
  ctx.probes.recordLabel("gqa_note", sharing);

  // The engine with N K/V heads: the viewed head, and the other head of its group, beside N = h.
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  const int head = std::clamp(ctx.view.head, 0, t.heads - 1);
  const int mate = groupMate(*r, head);
  ImGui::Separator();
  textWrapped(formatText("The engine on this sentence, W_k and W_v of each group averaged over its heads (the first "
                         "step of the GQA paper, which then uptrains the grouped model for about 5 %% of its "
                         "pre-training compute; none here); head %d picked in the Heatmap tab. Max "
                         "change from %s: %.3g in any weight, %.3g in the outputs.",
                         head, gqaReferenceName(*r).c_str(), r->maxWeightChange, r->maxOutputChange));
  const std::string reference = gqaReferenceText(*r);
  if (!reference.empty()) textWrappedDisabled(reference);
  ctx.probes.recordLabel("gqa_reference", reference);
  struct Pic {
    std::string title;
    const Trace* trace;
    int head;
  };
  std::vector<Pic> pics = {{gqaReferenceTitle(*r, head), &r->mha, head},
                           {"head " + std::to_string(head) + ", N = " + std::to_string(r->kvHeads) + ": K/V head " +
                                std::to_string(r->kvHeadOf[static_cast<std::size_t>(head)]),
                            &r->grouped, head}};
  if (mate >= 0) {
    pics.push_back({"head " + std::to_string(mate) + ", same K/V head", &r->grouped, mate});
  }
  const float labelsW = 4.5f * em;
  const float side = std::clamp((avail - colorbarWidth() - 3.0f * (labelsW + em)) / 3.0f, 7.0f * em, 13.0f * em);
  const std::size_t table = static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk);
  for (std::size_t i = 0; i < pics.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    if (i) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(r->kvHeadOf[static_cast<std::size_t>(pics[i].head)])),
                       "%s", pics[i].title.c_str());
    const Trace& tr = *pics[i].trace;
    MatrixPicture m;
    m.data = tr.tensor(StageId::Weights).ptr() +
             (static_cast<std::size_t>(b) * static_cast<std::size_t>(tr.heads) + static_cast<std::size_t>(pics[i].head)) * table;
    m.rows = tr.tq;
    m.cols = tr.tk;
    m.rowLabels = tr.queryTokens[static_cast<std::size_t>(b)];
    m.colLabels = tr.keyTokens[static_cast<std::size_t>(b)];
    m.trace = &tr;
    m.batchIndex = b;
    m.head = pics[i].head;
    m.textureTag = 536870912 + 4 * r->kvHeads + static_cast<int>(i);  // this tab's own range; the head is in the key
    m.colorbar = i + 1 == pics.size();
    m.numbers = t.tk <= 8;
    drawMatrix(ctx, "w", m, ImVec2(side + labelsW + (m.colorbar ? colorbarWidth() : 0.0f), side + 4.5f * em));
    ImGui::EndGroup();
    ImGui::PopID();
  }
  const std::string mates = gqaMatesText(*r, head);
  textWrappedDisabled(mates);
  ctx.probes.recordLabel("gqa_mates", mates);

  ImGui::Separator();
  ImGui::TextUnformatted("Published models, computed from the sizes in their config.json (biases left out):");
  publishedTable(*r);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/gqa.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Gqa::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawGqaTab(ui, shown, choices);
}
template void mhascope::lessons::Gqa::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
