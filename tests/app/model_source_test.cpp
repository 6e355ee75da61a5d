// The model source the CLI and the window share (app/model_source/): config + files → model,
// the controls a file fixes, and the file kinds the window's Open tells apart from headers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "io/weights_io.hpp"
#include "model_source/file_kind.hpp"
#include "model_source/model_source.hpp"

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
}  // namespace mhascope
