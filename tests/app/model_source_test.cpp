// The model source the CLI and the window share (core/model_source/): config + files → model,
// the controls a file fixes, and the file kinds the window's Open tells apart from headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
#include <unistd.h>

#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "io/presets.hpp"
#include "io/weights_io.hpp"
#include "io/workspace.hpp"
#include "model_folder_copy.hpp"
#include "model_source/file_kind.hpp"
#include "model_source/model_source.hpp"
#include "model_source/model_text.hpp"
#include "state/app_state.hpp"
#include "state/open_file.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;

class ModelSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mhascope_model_source_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Weights of a d_model = 12, h = 3 text model, saved as PyTorch names.
  MhaWeights writeWeights(const std::string& file) {
    ModelConfig c;
    c.dModel = 12;
    c.heads = 3;
    c.seed = 7;
    auto m = buildModel(c);
    EXPECT_TRUE(m);
    EXPECT_TRUE(saveSafetensors(path(file), stateDictFromWeights(m->weights), {{"format", "pt"}}));
    return m->weights;
  }
  fs::path dir_;
};

TEST_F(ModelSourceTest, WeightsDecideDModelInTheWindowAndMustMatchOnTheCommandLine) {
  const MhaWeights w = writeWeights("w.safetensors");
  ModelRequest r;  // default config: d_model 8
  r.files.weights = path("w.safetensors");
  auto cli = modelFromSource(r);
  ASSERT_FALSE(cli);
  EXPECT_NE(cli.error().message.find("--weights '" + path("w.safetensors") + "'"), std::string::npos) << cli.error().message;
  r.weightsDecideDModel = true;  // the window: the file sets d_model, the text stays
  auto win = modelFromSource(r);
  ASSERT_TRUE(win) << win.error().message;
  EXPECT_EQ(win->config.dModel, 12);
  EXPECT_EQ(win->model.inputs.query.dim(2), 12);
  EXPECT_TRUE(win->model.weights.wq == w.wq);
  EXPECT_TRUE(win->seedUsed);  // the embeddings still come from the seed
}

TEST_F(ModelSourceTest, MissingGarbageAndFolderFilesNameThePath) {
  ModelRequest r;
  r.weightsDecideDModel = true;
  for (const std::string& p : {path("missing.safetensors"), dir_.string()}) {
    r.files.weights = p;
    auto m = modelFromSource(r);
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find(p), std::string::npos) << m.error().message;
  }
  std::ofstream(path("garbage.npy")) << "not a numpy file at all";
  r.files = {};
  r.files.query = path("garbage.npy");
  auto q = modelFromSource(r);
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().message.find("garbage.npy"), std::string::npos) << q.error().message;
}

TEST_F(ModelSourceTest, QueryFileSetsDModelAndAnExplicitOneMustAgree) {
  Tensor q(Shape{1, 5, 6}, {"B", "T", "d_model"});
  q.data.assign(30, 0.25f);
  ASSERT_TRUE(saveNpy(path("q.npy"), q));
  ModelRequest r;
  r.config.heads = 3;
  r.files.query = path("q.npy");
  auto m = modelFromSource(r);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->config.dModel, 6);
  EXPECT_EQ(m->model.inputs.query.dim(1), 5);
  r.requiredDModel = 8;
  auto bad = modelFromSource(r);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--d-model 8 contradicts --query"), std::string::npos) << bad.error().message;
}

TEST_F(ModelSourceTest, ControlsFixedByFilesSayWhy) {
  InputFiles f;
  EXPECT_EQ(fixedByFiles(f, "d_model"), "");
  f.weights = "w.safetensors";
  EXPECT_NE(fixedByFiles(f, "d_model").find("weights file 'w.safetensors'"), std::string::npos);
  EXPECT_EQ(fixedByFiles(f, "text"), "");  // weights + a new text works
  EXPECT_EQ(fixedByFiles(f, "heads"), "");
  // The file's K/V projections decide N; positions inside attention and the window stay free.
  EXPECT_NE(fixedByFiles(f, "kv_heads").find("weights file 'w.safetensors'"), std::string::npos);
  EXPECT_EQ(fixedByFiles(f, "attention_positions"), "");
  EXPECT_EQ(fixedByFiles(f, "window"), "");
  f.query = "q.npy";
  EXPECT_NE(fixedByFiles(f, "text").find("query file 'q.npy'"), std::string::npos);
  f = {};
  f.checkpoint = "m.safetensors";
  EXPECT_NE(fixedByFiles(f, "heads").find("trained layer"), std::string::npos);
}


TEST_F(ModelSourceTest, ModelFolderLayerIsDescribedTruthfully) {
  ModelRequest r;
  r.files.model = modelFolderCopy(dir_, "llama_gqa");
  r.files.layer = 1;
  r.config.text = "ab ca";  // 5 tokens: a b Ġ c a
  r.use = MemoryUse::app();
  auto m = modelFromSource(r);
  ASSERT_TRUE(m) << m.error().message;
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.name, "model");
  EXPECT_EQ(c.text, "ab ca");
  EXPECT_EQ(c.dModel, 32);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.kvHeads, 2);
  EXPECT_EQ(c.attnPositions, AttnPositions::Rope);
  EXPECT_FALSE(c.positions);
  EXPECT_EQ(c.mask, MaskKind::Causal);
  EXPECT_FALSE(c.bias);
  EXPECT_FALSE(m->seedUsed);
  EXPECT_NE(m->describeNote.find("llama model"), std::string::npos) << m->describeNote;
  EXPECT_NE(m->describeNote.find("layer 1 (L = 2), 5 tokens (tokenizer.json)"), std::string::npos) << m->describeNote;
  ASSERT_TRUE(m->modelLayer);
  EXPECT_EQ(m->modelLayer->ids, (std::vector<int>{0, 1, 26, 2, 0}));
  EXPECT_EQ(m->model.inputs.query.shape, (Shape{1, 5, 32}));
  EXPECT_EQ(m->model.options.kvHeads, 2);
  EXPECT_TRUE(m->model.options.causal);
  Trace t;
  ASSERT_TRUE(forward(m->model.inputs, m->model.weights, m->model.options, t));
  EXPECT_EQ(t.kvHeads, 2);

  // GPT-2: biases on every projection, its learned positions already inside the hidden states.
  ModelRequest g;
  g.files.model = modelFolderCopy(dir_, "gpt2");
  g.config.text = "abc";
  auto gm = modelFromSource(g);
  ASSERT_TRUE(gm) << gm.error().message;
  EXPECT_TRUE(gm->config.bias);
  EXPECT_EQ(gm->config.attnPositions, AttnPositions::None);
  EXPECT_EQ(gm->config.kvHeads, 0);
  EXPECT_NE(gm->describeNote.find("layer 0 (L = 2)"), std::string::npos) << gm->describeNote;
  EXPECT_NE(gm->describeNote.find("learned positions inside the hidden states"), std::string::npos);
}

TEST_F(ModelSourceTest, ModelFolderRefusalsAndCancel) {
  ModelRequest r;
  r.files.model = modelFolderCopy(dir_, "llama_gqa");
  r.config.text = "abc";
  r.files.weights = "w.safetensors";
  auto m = modelFromSource(r);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("--weights 'w.safetensors' cannot be used with --model"), std::string::npos);
  r.files.weights.clear();
  r.files.layer = 2;
  m = modelFromSource(r);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("--layer 2 is outside the model's 2 layers (0 .. 1, num_hidden_layers in"),
            std::string::npos) << m.error().message;
  r.config.text.clear();
  r.files.layer = 1;
  m = modelFromSource(r);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("the text is empty"), std::string::npos) << m.error().message;
  // The layers before the shown one report progress and can be stopped.
  r.config.text = "abc";
  int calls = 0;
  r.modelProgress = [&](int done, int layers) {
    EXPECT_EQ(layers, 2);
    EXPECT_EQ(done, 1);
    ++calls;
    return false;
  };
  m = modelFromSource(r);
  ASSERT_FALSE(m);
  EXPECT_EQ(calls, 1);
  EXPECT_NE(m.error().message.find("cancelled"), std::string::npos) << m.error().message;
}

// info describes a layer from the folder's spec and T: no layer before it runs (a progress call
// would mean one did), yet the weights, options, config and shapes are that layer's.
TEST_F(ModelSourceTest, DescribeOnlyRunsNoEarlierLayer) {
  ModelRequest r;
  r.files.model = modelFolderCopy(dir_, "llama_gqa");
  r.files.layer = 1;
  r.config.text = "ab ca";
  auto full = modelFromSource(r);
  ASSERT_TRUE(full) << full.error().message;
  int calls = 0;
  r.modelProgress = [&](int, int) {
    ++calls;
    return true;
  };
  r.describeOnly = true;
  auto d = modelFromSource(r);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(d->model.weights.wq, full->model.weights.wq);  // layer 1's own weights
  EXPECT_EQ(d->model.weights.wk, full->model.weights.wk);
  EXPECT_EQ(d->model.inputs.query.shape, full->model.inputs.query.shape);
  EXPECT_EQ(d->model.options.kvHeads, full->model.options.kvHeads);
  EXPECT_EQ(d->model.options.causal, full->model.options.causal);
  EXPECT_EQ(d->describeNote, full->describeNote);
  EXPECT_EQ(d->config.dModel, full->config.dModel);
  r.describeOnly = false;
  ASSERT_TRUE(modelFromSource(r));
  EXPECT_EQ(calls, 1);  // the full source runs layer 0 first
}

// The window's caches: every layer of the same folder and text gives the numbers it gives
// without them, the tokenizer is read once for all of them, and a changed tokenizer file is read
// anew (a stale tokenizer would tokenize the text differently from the files on disk).
TEST_F(ModelSourceTest, TheWindowsCachesGiveTheSameLayersAndReadTheTokenizerOnce) {
  ModelRequest r;
  r.files.model = modelFolderCopy(dir_, "llama_gqa");
  r.config.text = "ab ca abc";
  r.use = MemoryUse::app();
  ModelRequest cached = r;
  cached.caches.tokenizers = std::make_shared<TokenizerCache>();
  cached.caches.residuals = std::make_shared<model::ResidualCache>();
  for (int layer : {1, 0, 1}) {
    r.files.layer = cached.files.layer = layer;
    auto plain = modelFromSource(r);
    auto fromCaches = modelFromSource(cached);
    ASSERT_TRUE(plain && fromCaches) << (plain ? fromCaches.error().message : plain.error().message);
    EXPECT_EQ(plain->model.inputs.query.data, fromCaches->model.inputs.query.data) << "layer " << layer;
    EXPECT_EQ(plain->config.tokens, fromCaches->config.tokens);
  }
  EXPECT_EQ(cached.caches.tokenizers->loads(), 1u);
  EXPECT_EQ(cached.caches.residuals->streams(), 1u) << "the stream before layer 1";
  // A tokenizer file rewritten with another vocabulary: read again, and its ids are the new ones.
  const fs::path tok = fs::path(r.files.model) / "tokenizer.json";
  std::string json;
  {
    std::ifstream in(tok);
    json.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // 'a' and 'b' (written as \u0061 and \u0062) swap ids.
  const std::string a0 = "\"\\u0061\": 0", b1 = "\"\\u0062\": 1";
  ASSERT_NE(json.find(a0), std::string::npos);
  ASSERT_NE(json.find(b1), std::string::npos);
  json.replace(json.find(a0), a0.size(), "\"\\u0061\": 1");
  json.replace(json.find(b1), b1.size(), "\"\\u0062\": 0");
  const auto written = fs::last_write_time(tok);
  std::ofstream(tok, std::ios::trunc) << json;
  // The file system's clock ticks in milliseconds: the rewrite is dated after the first write, as
  // any later edit is.
  fs::last_write_time(tok, written + std::chrono::seconds(1));
  auto a = modelFromSource(cached);
  auto b = modelFromSource(r);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(cached.caches.tokenizers->loads(), 2u);
  EXPECT_EQ(a->model.inputs.query.data, b->model.inputs.query.data);
}

// A text that is not valid UTF-8 is read with U+FFFD and said with the first offset, in the note
// every view shows, and in the refusal when the replacement's bytes are outside the vocabulary.
TEST_F(ModelSourceTest, InvalidUtf8TextIsSaid) {
  EXPECT_EQ(invalidUtf8Note("abc", "--text"), "");
  EXPECT_EQ(invalidUtf8Note("ab\xff" "cd", "--text"),
            "--text is not valid UTF-8: its ill-formed bytes are read as U+FFFD, the replacement character (the first "
            "at byte 2)");
  const std::string folder = modelFolderCopy(dir_, "llama_gqa");
  auto mt = tokenizeForModel(folder, "ab\xff" "c", "the text");
  ASSERT_FALSE(mt.ok());
  EXPECT_NE(mt.error().message.find("the text is not valid UTF-8"), std::string::npos) << mt.error().message;
  auto clean = tokenizeForModel(folder, "ab ca", "the text");
  ASSERT_TRUE(clean.ok()) << clean.error().message;
  EXPECT_EQ(clean->textNote, "");
}

TEST_F(ModelSourceTest, ControlsAModelFolderFixes) {
  InputFiles f;
  f.model = "gpt2";
  f.layer = 3;
  EXPECT_EQ(fixedByFiles(f, "text"), "");  // the text and the layer stay the user's
  EXPECT_EQ(fixedByFiles(f, "layer"), "");
  for (const char* control : {"d_model", "heads", "kv_heads", "attention_positions", "positions", "window", "mask",
                              "pad", "bias", "tokens", "batch", "cross", "scale"}) {
    EXPECT_NE(fixedByFiles(f, control).find("set by the model folder 'gpt2'"), std::string::npos) << control;
  }
  EXPECT_NE(fixedByFiles(f, "seed").find("not used"), std::string::npos);
}

TEST_F(ModelSourceTest, FileKindsFromHeaders) {
  writeWeights("w.safetensors");
  auto w = inspectFile(path("w.safetensors"));
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->kind, FileKind::Weights);
  EXPECT_EQ(w->shape, (Shape{36, 12}));
  Tensor m(Shape{4, 4}, {"T_q", "T_k"});
  m.data.assign(16, 0.0f);
  ASSERT_TRUE(saveNpy(path("m.npy"), m));
  auto a = inspectFile(path("m.npy"));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->kind, FileKind::Array);
  EXPECT_EQ(a->shape, (Shape{4, 4}));
  std::ofstream(path("ws.json")) << R"({"mhascope_workspace": 1, "config": {}})";
  std::ofstream(path("p.json")) << R"({"text": "a b c", "d_model": 4, "heads": 2})";
  EXPECT_EQ(inspectFile(path("ws.json"))->kind, FileKind::Workspace);
  EXPECT_EQ(inspectFile(path("p.json"))->kind, FileKind::Preset);
  // An exported page opens as the workspace it carries; a page without one is refused, named.
  std::ofstream(path("view.html")) << "<!DOCTYPE html><html><body>" << kHtmlWorkspaceOpen
                                   << R"({"mhascope_workspace": 1, "config": {}})" << "</script></body></html>";
  std::ofstream(path("plain.html")) << "<!doctype html><p>hi</p>";
  auto page = inspectFile(path("view.html"));
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->kind, FileKind::Workspace);
  auto plain = inspectFile(path("plain.html"));
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("plain.html' is an HTML page without a mhascope workspace"), std::string::npos)
      << plain.error().message;
  // a header length of 2^63: refused from its first 8 bytes, nothing more is read
  std::ofstream(path("huge.safetensors"), std::ios::binary) << std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) << "{}";
  for (const std::string& bad : {path("huge.safetensors"), path("missing.npy"), dir_.string(), path("p.txt")}) {
    if (bad == path("p.txt")) std::ofstream(bad) << "x";
    auto r = inspectFile(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

}  // namespace
// Closing the model (x on "model: …" in Files in use) resets what the model fixed, not the text
// the user typed for it.
TEST(ModelSourceClose, ClosingTheModelKeepsTheUsersText) {
  for (const char* flag : {"--model", ""}) {
    app::AppState state;
    state.doc.files.model = "/some/gpt2";
    state.doc.files.layer = 3;
    state.doc.config.name = "model";
    state.doc.config.text = "The cat sat\non the mat";
    state.doc.config.dModel = 768;
    state.doc.config.heads = 12;
    if (*flag) {
      app::closeFile(state, flag);
    } else {
      app::closeAllFiles(state);
    }
    EXPECT_TRUE(state.doc.files.empty());
    EXPECT_EQ(state.doc.config.text, "The cat sat\non the mat") << flag;
    auto def = loadPreset("default");
    ASSERT_TRUE(def);
    EXPECT_EQ(state.doc.config.dModel, def->dModel) << flag;
    EXPECT_EQ(state.doc.config.heads, def->heads) << flag;
  }
}

// The Open popup's listing, made by the update step (refreshOpenFileListing): the folder's
// sub-folders then its openable files, listed again at once when the folder changes and else at
// most every kOpenListingSeconds; a recent file that went is marked missing on the next look.
TEST(OpenFileListing, ListsFoldersFirstFollowsTheFolderAndSeesChangesAfterTheInterval) {
  const fs::path dir = fs::temp_directory_path() / ("mhascope_open_listing_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "b_folder");
  fs::create_directories(dir / "a_model");
  auto touch = [](const fs::path& p) { std::ofstream(p) << "x"; };
  touch(dir / "a_model" / "config.json");
  touch(dir / "w.safetensors");
  touch(dir / "q.npy");
  touch(dir / "notes.txt");    // not openable
  touch(dir / ".hidden.npy");  // hidden
  touch(dir / "b_folder" / "k.npy");
  auto names = [](const app::OpenUi& ui) {
    std::vector<std::string> out;
    for (const auto& e : ui.entries) out.push_back(e.name + (e.model ? "/model" : e.folder ? "/" : ""));
    return out;
  };

  app::OpenUi ui;
  ui.folder = dir.string();
  ui.recent = {(dir / "w.safetensors").string(), (dir / "q.npy").string()};
  app::refreshOpenFileListing(ui, 10.0);
  EXPECT_EQ(ui.listedFolder, dir.string());
  EXPECT_EQ(ui.listError, "");
  EXPECT_EQ(names(ui), (std::vector<std::string>{"a_model/model", "b_folder/", "q.npy", "w.safetensors"}));
  EXPECT_TRUE(ui.recentMissing.empty());

  // A new file and a deleted recent one: unseen until the interval has passed.
  touch(dir / "p.json");
  fs::remove(dir / "q.npy");
  app::refreshOpenFileListing(ui, 10.0 + 0.5 * app::kOpenListingSeconds);
  EXPECT_EQ(names(ui), (std::vector<std::string>{"a_model/model", "b_folder/", "q.npy", "w.safetensors"}));
  EXPECT_TRUE(ui.recentMissing.empty());
  app::refreshOpenFileListing(ui, 10.0 + app::kOpenListingSeconds);
  EXPECT_EQ(names(ui), (std::vector<std::string>{"a_model/model", "b_folder/", "p.json", "w.safetensors"}));
  EXPECT_EQ(ui.recentMissing, std::vector<std::string>{(dir / "q.npy").string()});

  // Another folder (a click in the list): listed at once.
  ui.folder = (dir / "b_folder").string();
  app::refreshOpenFileListing(ui, 10.0 + app::kOpenListingSeconds + 0.01);
  EXPECT_EQ(ui.listedFolder, (dir / "b_folder").string());
  EXPECT_EQ(names(ui), std::vector<std::string>{"k.npy"});
  fs::remove_all(dir);
}

}  // namespace mhascope
