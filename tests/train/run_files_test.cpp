// What a training run reads and writes: checkpoints every reader accepts (any seed, the periods
// of the tasks without one), declared sizes checked before allocating, the evaluation history
// carried by the checkpoint (bounded, downsampled, size-checked), the memory estimate refused
// before allocating, the text task's bounds, clear messages for rates and alphabets, and the rule
// for which files --save/--log (and the window's Save checkpoint) may replace.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/file_io.hpp"
#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"
#include "train/circuit.hpp"
#include "train/memory.hpp"
#include "train/outputs.hpp"
#include "train/session.hpp"
#include "small_settings.hpp"

using namespace mhascope;
using namespace mhascope::train;
namespace fs = std::filesystem;

namespace {

// A scratch folder removed at the end of each test.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("mhascope_run_files_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

void writeText(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

Trainer trained(TrainSettings s, int steps, int evalEvery) {
  auto t = Trainer::make(s);
  EXPECT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->evaluate().ok());
  for (int i = 1; i <= steps; ++i) {
    EXPECT_TRUE(t->step().ok());
    if (i % evalEvery == 0) EXPECT_TRUE(t->evaluate().ok());
  }
  return std::move(*t);
}

Evaluation evaluationAt(std::int64_t step, int layers, int heads, double prev, double induction, double loss) {
  Evaluation e;
  e.step = step;
  e.loss = loss;
  e.accuracy = 0.5;
  e.trainLoss = loss + 0.1;
  e.layers = layers;
  e.heads = heads;
  e.scores.assign(static_cast<std::size_t>(layers * heads), HeadScores{});
  e.scores[0].prevToken = prev;  // layer 0 head 0
  e.scores[0].prevTokenNew = prev;
  if (layers > 1) {  // layer 1 head 0: prefix matching and copying together
    e.scores[static_cast<std::size_t>(heads)].induction = induction;
    e.scores[static_cast<std::size_t>(heads)].copying = induction;
  }
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// What `train` writes, every reader accepts
// ---------------------------------------------------------------------------------------------

TEST(TrainRunFiles, EverySeedRoundTrips) {
  TrainSettings s = fixtures::smallInduction();
  s.seed = std::numeric_limits<std::uint64_t>::max();
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto back = decodeCheckpoint(encodeCheckpoint(t->checkpoint()), "max-seed.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->seed, std::numeric_limits<std::uint64_t>::max());
}

TEST(TrainRunFiles, TasksWithoutAPeriodWriteReadablePeriods) {
  for (auto [kind, pmin, pmax] : {std::tuple{TaskKind::Reverse, 0, 6}, std::tuple{TaskKind::Sort, 5000, 6000}}) {
    TrainSettings s = fixtures::smallInduction();
    s.task.kind = kind;
    s.task.periodMin = pmin;
    s.task.periodMax = pmax;
    auto t = Trainer::make(s);
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto back = decodeCheckpoint(encodeCheckpoint(t->checkpoint()), "c.safetensors");
    ASSERT_TRUE(back.ok()) << taskName(kind) << ": " << back.error().message;
  }
}

TEST(TrainRunFiles, DeclaredSizesAreCheckedAgainstTheTensorsBeforeAllocating) {
  TrainSettings s = fixtures::smallInduction();
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok());
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(t->checkpoint()), "c");
  ASSERT_TRUE(parsed.ok());
  auto meta = parsed->metadata;
  meta["vocab"] = "65536";
  meta["d_model"] = "4096";
  meta["seq"] = "4096";
  meta.erase("history");
  const auto t0 = std::chrono::steady_clock::now();
  auto bad = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "huge.safetensors");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'emb.weight' has shape (16, 16), expected (65536, 4096)"), std::string::npos)
      << bad.error().message;
  EXPECT_LT(seconds, 1.0) << "the 4 GB of parameters those sizes declare were not allocated";
}

TEST(TrainRunFiles, ABadTaskSettingNamesTheFile) {
  auto t = Trainer::make(fixtures::smallInduction());
  ASSERT_TRUE(t.ok());
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(t->checkpoint()), "c");
  auto meta = parsed->metadata;
  meta["period_max"] = "7";  // T = 12 < 2 k_max
  auto bad = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "periods.safetensors");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("periods.safetensors is not a usable mhascope checkpoint"), std::string::npos);
  EXPECT_NE(bad.error().message.find("2 * k_max = 14"), std::string::npos) << bad.error().message;
}

TEST(TrainRunFiles, LoadingRefusesAFileLargerThanTheBudgetAllows) {
  Scratch dir;
  auto t = Trainer::make(fixtures::smallInduction());
  ASSERT_TRUE(saveCheckpoint(dir / "c.safetensors", t->checkpoint()).ok());
  auto small = loadCheckpoint(dir / "c.safetensors", 1024);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("more than the memory budget of 1.0 KiB"), std::string::npos)
      << small.error().message;
  auto ok = loadCheckpoint(dir / "c.safetensors", 64ull << 20);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->origin, dir / "c.safetensors");
}

// ---------------------------------------------------------------------------------------------
// The history block
// ---------------------------------------------------------------------------------------------

TEST(TrainRunFiles, TheCheckpointCarriesTheHistoryAndARunContinuesIt) {
  Trainer t = trained(fixtures::smallInduction(), 40, 10);
  ASSERT_EQ(t.history().size(), 5u);
  auto back = decodeCheckpoint(encodeCheckpoint(t.checkpoint()), "h.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->history.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back->history[i].step, t.history()[i].step);
    EXPECT_NEAR(back->history[i].loss, t.history()[i].loss, 1e-6);
    EXPECT_NEAR(back->history[i].at(1, 1).induction, t.history()[i].at(1, 1).induction, 1e-6);
  }
  EXPECT_FALSE(back->history[0].trainLoss.has_value()) << "no step before step 0";
  ASSERT_TRUE(back->history[4].trainLoss.has_value());
  EXPECT_GT(*back->history[4].trainLoss, 0.0);

  TrainSettings s = fixtures::smallInduction();
  auto u = Trainer::make(s, *back);
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->history().size(), 5u) << "the loaded run's curves continue";
  ASSERT_TRUE(u->evaluate().ok());  // same step: replaces the saved one, keeps its train loss
  EXPECT_EQ(u->history().size(), 5u);
  EXPECT_TRUE(u->history().back().trainLoss.has_value());
  ASSERT_TRUE(u->step().ok());
  ASSERT_TRUE(u->evaluate().ok());
  EXPECT_EQ(u->history().size(), 6u);
  EXPECT_EQ(u->history().back().step, 41);

  // A session on that checkpoint publishes the history and the last training loss at once.
  TrainingSession session;
  session.holdSteps(10.0);
  ASSERT_TRUE(session.reset(s, 10, *back).ok());
  auto v = session.view();
  EXPECT_EQ(v->history.size(), 5u);
  EXPECT_TRUE(v->trainLossKnown);
  EXPECT_DOUBLE_EQ(v->trainLoss, static_cast<double>(static_cast<float>(*t.history().back().trainLoss)));
  session.releaseSteps();
}

TEST(TrainRunFiles, OldCheckpointsWithoutHistoryStillLoad) {
  Trainer t = trained(fixtures::smallInduction(), 10, 10);
  auto parsed = parseSafetensorsWithMetadata(encodeCheckpoint(t.checkpoint()), "c");
  auto meta = parsed->metadata;
  meta.erase("history");
  auto back = decodeCheckpoint(encodeSafetensors(parsed->tensors, meta), "old.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->history.empty());
  auto u = Trainer::make(fixtures::smallInduction(), *back);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->history().empty());
}

TEST(TrainRunFiles, ALongHistoryIsDownsampledKeepingTheStepsTheLessonNames) {
  std::vector<Evaluation> h;
  for (int i = 0; i < 20000; ++i) {
    const bool formed = i >= 12345;  // loss < 0.5 with both heads above the threshold from here
    h.push_back(evaluationAt(i * 10, 2, 2, i >= 777 ? 0.6 : 0.1, formed ? 0.6 : 0.1, formed ? 0.2 : 2.0));
  }
  const std::string block = historyMetadata(h, 2, 2);
  auto back = parseHistoryMetadata(block, 2, 2, h.back().step);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_LE(back->size(), maxSavedEvaluations(2, 2));
  EXPECT_GE(back->size(), maxSavedEvaluations(2, 2) - 2);
  EXPECT_EQ(back->front().step, 0);
  EXPECT_EQ(back->back().step, h.back().step);
  EXPECT_EQ(circuitFormedAt(*back, back->size() - 1), 123450);
  EXPECT_EQ(firstStepAbove(*back, back->size() - 1, 0, 0, &HeadScores::prevToken), 7770);
  EXPECT_EQ(nlohmann::json::parse(block).at("evaluations_in_run"), 20000);
}

TEST(TrainRunFiles, AMalformedHistoryIsRefusedWithTheReason) {
  const std::vector<Evaluation> h = {evaluationAt(0, 2, 2, 0.1, 0.1, 2), evaluationAt(10, 2, 2, 0.1, 0.1, 2)};
  nlohmann::json good = nlohmann::json::parse(historyMetadata(h, 2, 2));
  auto expectError = [](const std::string& text, std::int64_t lastStep, const std::string& want) {
    auto r = parseHistoryMetadata(text, 2, 2, lastStep);
    ASSERT_FALSE(r.ok()) << text.substr(0, 200);
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  };
  expectError(good.dump(), 5, "must increase and not pass the checkpoint's step 5");
  nlohmann::json j = good;
  j["evaluations"][1][0] = 0;
  expectError(j.dump(), 100, "steps must increase");
  j = good;
  j["evaluations"][0].erase(4);
  expectError(j.dump(), 100, "is not an array of 36 numbers");
  j = good;
  j["heads"] = 3;
  expectError(j.dump(), 100, "is for other sizes");
  j = good;
  j["version"] = 3;
  expectError(j.dump(), 100, "unknown one");
  // Version 1 held the earlier induction score (latest copy only): read as no history, not shown.
  j = good;
  j["version"] = 1;
  auto old = parseHistoryMetadata(j.dump(), 2, 2, 100);
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_TRUE(old->empty());
  j = good;
  j["evaluations"] = nlohmann::json::array();
  for (std::size_t i = 0; i <= maxSavedEvaluations(2, 2); ++i) j["evaluations"].push_back(good["evaluations"][0]);
  expectError(j.dump(), 100, "more than the " + std::to_string(maxSavedEvaluations(2, 2)));
  expectError(std::string(100, '[') + std::string(100, ']'), 100, "nests deeper");
  expectError(std::string(kMaxHistoryBytes + 1, ' '), 100, "more than the limit");
}

TEST(TrainRunFiles, AnEvaluationWithoutScoresIsNeverIndexed) {
  Evaluation e;
  e.layers = 2;
  e.heads = 8;  // and no scores
  EXPECT_FALSE(e.complete());
  EXPECT_FALSE(inductionCircuit(e).formed);
  EXPECT_EQ(circuitFormedAt({e}, 0), -1);
  EXPECT_EQ(firstStepAbove({e}, 0, 1, 7, &HeadScores::induction), -1);
  EXPECT_TRUE(circuitLesson({e}, 0, TaskKind::Induction).empty());
}

// ---------------------------------------------------------------------------------------------
// Memory, text and messages
// ---------------------------------------------------------------------------------------------

TEST(TrainRunFiles, TheMemoryEstimateIsCheckedBeforeAllocating) {
  TrainSettings s;
  s.task.vocab = 65536;
  s.model.dModel = 4096;
  s.model.heads = 8;
  s.memoryBudgetBytes = 512ull << 20;
  const auto t0 = std::chrono::steady_clock::now();
  auto t = Trainer::make(s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(t.ok());
  const std::string& m = t.error().message;
  EXPECT_NE(m.find("this training run needs about"), std::string::npos) << m;
  EXPECT_NE(m.find("AdamW state"), std::string::npos) << m;
  EXPECT_NE(m.find("more than the memory budget of 512.0 MiB"), std::string::npos) << m;
  EXPECT_LT(seconds, 1.0);
  EXPECT_FALSE(checkTrainingMemory(s).ok()) << "the window's entry point says the same";

  // Long sequences: the probe evaluation's attention tables are what does not fit.
  TrainSettings p;
  p.task.seq = 768;
  p.model.heads = 8;
  p.model.dModel = 64;
  p.batch = 1;
  p.steps = 1;
  p.memoryBudgetBytes = 512ull << 20;
  auto q = Trainer::make(p);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find("probe evaluation (16 sequences)"), std::string::npos) << q.error().message;
  const TrainMemoryEstimate e = estimateTrainingMemory(p, 64, 0);
  EXPECT_GT(e.probe, 8.0 * 16 * 768 * 768 * 4) << "at least the probe's attention weights";
  p.memoryBudgetBytes = 4ull << 30;  // a larger budget runs it
  EXPECT_TRUE(checkTrainingMemory(p).ok());
}

TEST(TrainRunFiles, TextTaskBoundsAndAlphabets) {
  Scratch dir;
  // Over the cap: refused from the file's size, naming the size and the cap.
  {
    std::ofstream f(dir / "big.txt", std::ios::binary);
    const std::string line(1 << 20, 'a');
    for (int i = 0; i < 17; ++i) f << line;
  }
  TaskConfig big{TaskKind::Text, 0, 8, 6, 16, dir / "big.txt"};
  auto b = Task::make(big);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("is 17.0 MiB"), std::string::npos) << b.error().message;
  EXPECT_NE(b.error().message.find("at most 16.0 MiB"), std::string::npos) << b.error().message;
  // Too many distinct characters: the count is named.
  std::vector<std::string> alphabet;
  for (int i = 0; i < 65537; ++i) alphabet.push_back(std::to_string(i));
  auto many = Task::makeText(4, alphabet, "0123456789");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("65537 distinct characters"), std::string::npos) << many.error().message;
  auto cfg = validateConfig({68648, 32, 64, 2, 2, false});
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().message.find("vocab (68648) is larger than the limit of 65536"), std::string::npos)
      << cfg.error().message;

  // --init on a text with another alphabet of the same size: refused, naming the difference.
  writeText(dir / "a.txt", "abcabcabcabcabcabcabc");
  writeText(dir / "b.txt", "abdabdabdabdabdabdabd");
  TrainSettings s;
  s.task = {TaskKind::Text, 0, 8, 6, 16, dir / "a.txt"};
  s.model.dModel = 8;
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  Checkpoint c = t->checkpoint();
  c.origin = "a.safetensors";
  s.task.textPath = dir / "b.txt";
  auto other = Trainer::make(s, c);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("the --init checkpoint 'a.safetensors' was trained on another alphabet"),
            std::string::npos) << other.error().message;
  EXPECT_NE(other.error().message.find("only in the checkpoint: 'c'; only in the text: 'd'"), std::string::npos)
      << other.error().message;
}

TEST(TrainRunFiles, RatesNameTheirValues) {
  TrainSettings s = fixtures::smallInduction();
  s.adam.lr = 0;
  auto a = Trainer::make(s);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("the learning rate must be a finite number > 0, got 0"), std::string::npos)
      << a.error().message;
  s.adam.lr = 1e-3f;
  s.adam.weightDecay = 1e30f;
  auto b = Trainer::make(s);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("learning rate × weight decay (0.001 × 1e+30"), std::string::npos)
      << b.error().message;
  EXPECT_EQ(b.error().message.find("may be too high"), std::string::npos) << "weight decay is named, not the lr";
}

// ---------------------------------------------------------------------------------------------
// Which files a run may write
// ---------------------------------------------------------------------------------------------

TEST(TrainRunFiles, OutputsAreNeitherInputsNorEachOtherNorTheWrongKind) {
  Scratch dir;
  Trainer t = trained(fixtures::smallInduction(), 10, 10);
  const RunIdentity id = runIdentity(t);
  writeText(dir / "corpus.txt", "abc");
  ASSERT_TRUE(saveCheckpoint(dir / "init.safetensors", t.checkpoint()).ok());
  auto check = [&](TrainOutputs o) { return checkTrainOutputs(o, id); };
  auto expectError = [&](TrainOutputs o, const std::string& want) {
    auto st = check(o);
    ASSERT_FALSE(st.ok()) << want;
    EXPECT_NE(st.error().message.find(want), std::string::npos) << st.error().message;
    o.force = true;  // forcing never makes an input an output
    if (want.find("already") == std::string::npos && want.find("another run") == std::string::npos &&
        want.find("holds step") == std::string::npos) {
      EXPECT_FALSE(check(o).ok()) << want;
    }
  };
  TrainOutputs o;
  o.inputs = {{"--init", dir / "init.safetensors"}, {"--text", dir / "corpus.txt"}};
  o.forceHint = "add --force";
  TrainOutputs x = o;
  x.checkpoint = dir / "corpus.txt";
  expectError(x, "its name must end in .safetensors");
  x = o;
  x.log = dir / "init.safetensors";
  expectError(x, "its name must end in .csv");
  x = o;
  x.log = dir / "pic.png";
  expectError(x, "its name must end in .csv");
  x = o;
  x.checkpoint = dir / "./init.safetensors";
  expectError(x, "is the same file as --init");
  fs::create_symlink(dir / "corpus.txt", dir / "corpus.csv");
  x = o;
  x.log = dir / "corpus.csv";
  expectError(x, "is the same file as --text");
  fs::create_symlink(dir / "nowhere.safetensors", dir / "link.safetensors");
  x = o;
  x.checkpoint = dir / "link.safetensors";
  expectError(x, "is a symbolic link");
  x = o;
  x.checkpoint = dir / "new.safetensors";
  x.log = dir / "new.safetensors";
  expectError(x, "its name must end in .csv");
  x.log = dir / "new.csv";
  EXPECT_TRUE(check(x).ok()) << check(x).error().message;
}

TEST(TrainRunFiles, AnExistingCheckpointIsReplacedOnlyByTheSameRunNotBehindIt) {
  Scratch dir;
  TrainSettings s = fixtures::smallInduction();
  Trainer t = trained(s, 20, 10);
  ASSERT_TRUE(saveCheckpoint(dir / "m.safetensors", t.checkpoint()).ok());
  TrainOutputs o;
  o.checkpoint = dir / "m.safetensors";
  o.forceHint = "add --force";
  // The same run at a later step (the window's repeated Save; a continued run): allowed.
  Trainer later = trained(s, 30, 10);
  EXPECT_TRUE(checkTrainOutputs(o, runIdentity(later)).ok());
  // The same settings from step 0: would replace the trained model with earlier parameters.
  auto fresh = Trainer::make(s);
  auto st = checkTrainOutputs(o, runIdentity(*fresh));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("holds step 20 of this run; it would be replaced by step 0"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("add --force"), std::string::npos);
  EXPECT_NE(st.error().message.find("continue it with --init"), std::string::npos);
  // The window has no --init: it names its own way to continue, and no --force.
  TrainOutputs window = o;
  window.forceHint.clear();
  window.checkpointName = "the checkpoint path";
  window.continueHint = "or load it with Load checkpoint to continue it";
  auto sw = checkTrainOutputs(window, runIdentity(*fresh));
  ASSERT_FALSE(sw.ok());
  EXPECT_EQ(sw.error().message.find("--"), std::string::npos) << sw.error().message;
  EXPECT_NE(sw.error().message.find("Load checkpoint"), std::string::npos) << sw.error().message;
  // Another run (other sizes): refused, naming what differs.
  TrainSettings other = s;
  other.model.dModel = 8;
  auto o8 = Trainer::make(other);
  st = checkTrainOutputs(o, runIdentity(*o8));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("holds a checkpoint of another run (d_model 16 there, 8 here)"), std::string::npos)
      << st.error().message;
  // Not a checkpoint at all.
  writeText(dir / "w.safetensors", "user data");
  o.checkpoint = dir / "w.safetensors";
  st = checkTrainOutputs(o, runIdentity(*fresh));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("already exists and is not an mhascope checkpoint"), std::string::npos);
  o.force = true;
  EXPECT_TRUE(checkTrainOutputs(o, runIdentity(*fresh)).ok());
  // An existing log: only with force.
  writeText(dir / "old.csv", "step\n");
  TrainOutputs l;
  l.log = dir / "old.csv";
  st = checkTrainOutputs(l, runIdentity(*fresh));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("already exists"), std::string::npos);
  l.force = true;
  EXPECT_TRUE(checkTrainOutputs(l, runIdentity(*fresh)).ok());
}
