// The one list of lessons (AllLessons, core/lessons/lessons.hpp): each lesson has one name (id =
// title in lower case, used nowhere twice), and the workspace's "lessons" object made from the
// lessons' own fields keeps exactly the keys and values workspaces have always held, so a
// workspace written before the lessons were one unit each opens with the same choices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "io/workspace.hpp"
#include "lessons/lessons.hpp"

namespace mhascope {
namespace {

using nlohmann::json;

TEST(LessonList, EachLessonHasOneNameUsedOnce) {
  std::set<std::string> ids;
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    std::string lower = L::kTitle;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return ch == ' ' ? '_' : std::tolower(ch); });
    lower = lower.substr(0, lower.find("_/_"));  // a title naming two alternatives ("GQA / MQA"): the first
    EXPECT_EQ(lower, L::kId) << "the title is the id up to capitals (a space is _)";
    EXPECT_TRUE(ids.insert(L::kId).second) << L::kId << " listed twice";
  });
  EXPECT_EQ(ids, (std::set<std::string>{"split", "params", "mix", "roles", "masks", "pitfalls", "cost", "lines", "cell",
                                        "gqa", "latent_attention", "stable_scores", "positions", "windows", "kv_cache",
                                        "quiz"}));
}

// The window's lesson list: the groups in order, each lesson once, in the order a newcomer takes
// them, each with one line of what it teaches.
TEST(LessonList, GroupsStandTogetherInTheirOrder) {
  std::vector<std::string> basics, today, check;
  for (const LessonEntry& e : kLessonEntries) {
    (e.group == LessonGroup::Basics ? basics : e.group == LessonGroup::Today ? today : check).emplace_back(e.id);
  }
  EXPECT_EQ(basics, (std::vector<std::string>{"lines", "cell", "split", "mix", "masks", "roles", "params", "cost",
                                              "pitfalls"}));
  EXPECT_EQ(today, (std::vector<std::string>{"positions", "kv_cache", "gqa", "latent_attention", "stable_scores",
                                             "windows"}));
  EXPECT_EQ(check, (std::vector<std::string>{"quiz"}));
  ASSERT_EQ(kLessonEntries.size(), basics.size() + today.size() + check.size());
  for (std::size_t i = 1; i < kLessonEntries.size(); ++i) {
    EXPECT_LE(kLessonEntries[i - 1].group, kLessonEntries[i].group) << kLessonEntries[i].id << " stands outside its group";
  }
  EXPECT_STREQ(lessonGroupTitle(LessonGroup::Basics), "Basics");
  EXPECT_STREQ(lessonGroupTitle(LessonGroup::Today), "Today's attention");
  EXPECT_STREQ(lessonGroupTitle(LessonGroup::CheckYourself), "Check yourself");
}

TEST(LessonList, EachEntryIsItsLessonsAndSaysWhatItTeachesInOneLine) {
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    const LessonEntry& e = kLessonEntries[AllLessons::indexOf<L>()];
    EXPECT_STREQ(e.id, L::kId);
    EXPECT_STREQ(e.title, L::kTitle);
    EXPECT_EQ(e.group, L::kGroup);
    const std::string learn = e.learn;
    EXPECT_FALSE(learn.empty()) << L::kId;
    EXPECT_EQ(learn.find('\n'), std::string::npos) << L::kId << ": one line";
    EXPECT_LE(learn.size(), 100u) << L::kId << ": one line, not a paragraph";
    EXPECT_NE(learn.back(), '.') << L::kId << ": a line of the list, not a sentence of a paragraph";
  });
}

TEST(LessonList, LessonsAreFoundByIdAndSteppedInListOrder) {
  EXPECT_EQ(lessonIndexOf("lines"), 0u);
  EXPECT_EQ(lessonIndexOf("masks"), 4u);
  EXPECT_EQ(lessonIndexOf("quiz"), kLessonEntries.size() - 1);
  EXPECT_FALSE(lessonIndexOf("Masks")) << "ids, not titles";
  EXPECT_FALSE(lessonIndexOf("heatmap"));
  EXPECT_FALSE(lessonIndexOf(""));
  EXPECT_STREQ(lessonAfter("masks", +1), "roles");
  EXPECT_STREQ(lessonAfter("masks", -1), "mix");
  EXPECT_STREQ(lessonAfter("pitfalls", +1), "positions") << "from one group into the next";
  EXPECT_STREQ(lessonAfter("lines", -1), "lines") << "the first stays the first";
  EXPECT_STREQ(lessonAfter("quiz", +1), "quiz") << "the last stays the last";
  EXPECT_STREQ(lessonAfter("windows", +5), "quiz");
  EXPECT_STREQ(lessonAfter("nope", +1), "lines") << "an unknown id goes to the first lesson";
  // Stepping forward from the first visits every lesson once, in list order.
  std::vector<std::string> walked{kLessonEntries.front().id};
  for (std::size_t i = 1; i < kLessonEntries.size(); ++i) walked.emplace_back(lessonAfter(walked.back(), +1));
  for (std::size_t i = 0; i < kLessonEntries.size(); ++i) EXPECT_EQ(walked[i], kLessonEntries[i].id);
}

// docs/lessons.md shows the list as the window does: a row per lesson, in list order, with its
// title, id and what it teaches word for word (the group named on its first row).
TEST(LessonList, TheDocsShowTheListWordForWord) {
  const std::string path = std::string(MHASCOPE_SOURCE_DIR) + "/docs/" + "lessons.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t from = 0;
  for (std::size_t i = 0; i < kLessonEntries.size(); ++i) {
    const LessonEntry& e = kLessonEntries[i];
    const bool firstOfGroup = i == 0 || kLessonEntries[i - 1].group != e.group;
    const std::string row = std::string("| ") + (firstOfGroup ? lessonGroupTitle(e.group) : "") + " | **" + e.title +
                            "** (`" + e.id + "`) | " + e.learn + " |\n";
    const std::size_t at = doc.find(row, from);
    EXPECT_NE(at, std::string::npos) << "the lessons page has no row, after the previous one:\n" << row;
    if (at != std::string::npos) from = at + row.size();
  }
}

// The "lessons" object of a workspace written before this list existed: every key and one value.
const char* kSavedLessons = R"({
  "batch": 1, "mix_token": 2, "mix_dim": 3, "edit_head": 1, "edit_query": 4, "edit_key": 5, "mask_kind": 1,
  "pad_keys": 2, "pitfall": 4, "sweep_variable": 2, "sweep_to": 32, "cell_head": 1, "cell_query": 6,
  "cell_key": 7, "split_head": 1, "edit_score": -2.5, "sweep_ends": [300, 900, 32], "heads_hidden": [0, 1]
})";

std::string workspaceWith(const json& lessons) {
  json j = json::parse(workspaceToJson(Workspace{}));
  j["lessons"] = lessons;
  return j.dump();
}

TEST(LessonList, SavedChoicesOpenIntoTheirLessonsAndAreWrittenBackTheSame) {
  const json saved = json::parse(kSavedLessons);
  auto ws = parseWorkspaceJson(workspaceWith(saved), "old.json");
  ASSERT_TRUE(ws) << ws.error().message;
  const LessonChoices& c = ws->lessons;
  EXPECT_EQ(c.batch, 1);
  EXPECT_EQ(c.of<lessons::Split>().head, 1);
  EXPECT_EQ(c.of<lessons::Mix>().token, 2);
  EXPECT_EQ(c.of<lessons::Mix>().dim, 3);
  EXPECT_EQ(c.of<lessons::Roles>().head, 1);
  EXPECT_EQ(c.of<lessons::Roles>().query, 4);
  EXPECT_EQ(c.of<lessons::Roles>().key, 5);
  EXPECT_EQ(c.of<lessons::Roles>().score, -2.5f);
  EXPECT_EQ(c.of<lessons::Masks>().kind, 1);
  EXPECT_EQ(c.of<lessons::Masks>().padKeys, 2);
  EXPECT_EQ(c.of<lessons::Pitfalls>().pitfall, 4);
  EXPECT_EQ(c.of<lessons::Cost>().variable, 2);
  EXPECT_EQ(c.of<lessons::Cost>().to, 32);
  EXPECT_EQ(c.of<lessons::Cost>().ends, (std::array<int, 3>{300, 900, 32}));
  EXPECT_EQ(c.of<lessons::Lines>().hidden, (std::vector<std::uint8_t>{0, 1}));
  EXPECT_EQ(c.of<lessons::Cell>().head, 1);
  EXPECT_EQ(c.of<lessons::Cell>().query, 6);
  EXPECT_EQ(c.of<lessons::Cell>().key, 7);
  const json written = json::parse(workspaceToJson(*ws))["lessons"];
  for (const auto& [key, value] : saved.items()) EXPECT_EQ(written.at(key), value) << key;  // the same values
  // The lessons that came later: their keys written with their defaults.
  EXPECT_EQ(written.at("window_size"), lessons::Windows::Choices{}.window);
  EXPECT_EQ(written.at("kv_prefill"), lessons::KvCache::Choices{}.prefill);
}

// A workspace written before a lesson existed has none of its keys: it opens with that lesson's
// defaults. One with some of a lesson's keys must have all of them.
TEST(LessonList, ALessonsKeysComeAllOrNone) {
  json later = json::parse(kSavedLessons);
  later["window_size"] = 5;
  later["window_sinks"] = 2;
  later["window_causal"] = 0;
  auto ws = parseWorkspaceJson(workspaceWith(later), "w.json");
  ASSERT_TRUE(ws) << ws.error().message;
  EXPECT_EQ(ws->lessons.of<lessons::Windows>().window, 5);
  EXPECT_EQ(ws->lessons.of<lessons::Windows>().sinks, 2);
  EXPECT_EQ(ws->lessons.of<lessons::Windows>().causal, 0);
  EXPECT_EQ(ws->lessons.of<lessons::KvCache>(), lessons::KvCache::Choices{});  // none of its keys: defaults
  later.erase("window_sinks");
  auto partial = parseWorkspaceJson(workspaceWith(later), "w.json");
  ASSERT_FALSE(partial);
  EXPECT_EQ(partial.error().message, "w.json: missing key /lessons/window_sinks");
}

TEST(LessonList, EveryLessonKeyIsRequiredAndNoOtherAllowed) {
  json missing = json::parse(kSavedLessons);
  missing.erase("pad_keys");
  auto a = parseWorkspaceJson(workspaceWith(missing), "w.json");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "w.json: missing key /lessons/pad_keys");
  json extra = json::parse(kSavedLessons);
  extra["masks"] = 1;
  auto b = parseWorkspaceJson(workspaceWith(extra), "w.json");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message, "w.json: unknown key /lessons/masks");
  json bad = json::parse(kSavedLessons);
  bad["sweep_ends"] = json::array({1, 2});
  auto c = parseWorkspaceJson(workspaceWith(bad), "w.json");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message.rfind("w.json: /lessons/sweep_ends must be an array of 3 integers, got ", 0), 0u)
      << c.error().message;
}

TEST(LessonList, ChoicesAreKeptInsideTheTrace) {
  Trace t;
  t.batch = 2;
  t.tq = t.tk = 4;
  t.dModel = 8;
  t.heads = 2;
  LessonChoices c;
  c.of<lessons::Cell>().query = 99;
  c.of<lessons::Mix>().dim = 99;
  c.of<lessons::Cost>().variable = 2;
  c.keepInRange(t, 7);
  EXPECT_EQ(c.batch, 1);
  EXPECT_EQ(c.of<lessons::Cell>().query, 3);
  EXPECT_EQ(c.of<lessons::Mix>().dim, 7);
  EXPECT_EQ(c.of<lessons::Cost>().to, 8);  // h sweeps up to d_model
}

}  // namespace
}  // namespace mhascope
