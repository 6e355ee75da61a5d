// Workspace files: SHA-256 against known vectors, a round trip of every block, strict parsing
// (truncated, wrong types, unknown keys, newer versions, huge), and the input files' checks
// (changed → refused, moved with the workspace → found and said, gone → "moved or deleted").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/file_io.hpp"
#include "io/sha256.hpp"
#include "io/workspace.hpp"

namespace fs = std::filesystem;
using namespace mhascope;

namespace {

fs::path freshDir(const char* name) {
  fs::path d = fs::temp_directory_path() / ("mhascope_ws_" + std::string(name) + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void writeBytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

Workspace sample() {
  Workspace ws;
  ws.presetName = "cat";
  ws.config.text = "the cat sat";
  ws.config.dModel = 12;
  ws.config.heads = 3;
  ws.config.mask = MaskKind::Causal;
  ws.config.scoreOverride.self = 5.0f;
  ws.config.scoreOverride.cells.push_back({1, -1, -1, "cat", "sat", 7.5f});
  ws.view.stage = StageId::MaskedScores;
  ws.view.head = 2;
  ws.view.tab = "All heads";
  ws.view.zoom = {3.5f, 1.25f, 0.5f};
  ws.view.weightZoom = {2.0f, 0.0f, 4.0f};
  ws.view.colormap = ColormapId::Magma;
  ws.view.seeAs = SeeAs::Deuteranopia;
  ws.view.sharedScale = false;
  ws.view.colorScale = ColorScale::Log;
  ws.view.weight = WeightId::Wo;
  ws.lessons.of<lessons::Cell>().query = 2;
  ws.lessons.of<lessons::Pitfalls>().pitfall = 3;
  ws.lessons.of<lessons::Roles>().score = -4.0f;
  ws.lessons.of<lessons::Lines>().hidden = {0, 1, 0};
  return ws;
}

}  // namespace

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a' fed in uneven pieces, and from a file (the streaming path).
  Sha256 s;
  const std::string piece(997, 'a');
  std::size_t left = 1'000'000;
  while (left > 0) {
    const std::size_t n = std::min(left, piece.size());
    s.update(piece.data(), n);
    left -= n;
  }
  const std::string million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  EXPECT_EQ(s.hexDigest(), million);
  const fs::path d = freshDir("sha");
  writeBytes(d / "a.bin", std::string(1'000'000, 'a'));
  EXPECT_EQ(sha256File((d / "a.bin").string()).value(), million);
  EXPECT_FALSE(sha256File("/dev/zero"));
  fs::remove_all(d);
}

TEST(Workspace, RoundTripKeepsEveryBlock) {
  const Workspace ws = sample();
  const std::string json = workspaceToJson(ws);
  EXPECT_NE(json.find("\"mhascope_workspace\": 1"), std::string::npos);
  EXPECT_TRUE(looksLikeWorkspace(json));
  auto back = parseWorkspaceJson(json, "w.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(workspaceToJson(*back), json);
  EXPECT_EQ(back->config.heads, 3);
  EXPECT_EQ(back->config.scoreOverride.cells.size(), 1u);
  EXPECT_EQ(back->view.stage, StageId::MaskedScores);
  EXPECT_EQ(back->view.zoom.panX, 1.25f);
  EXPECT_EQ(back->view.colorScale, ColorScale::Log);
  EXPECT_EQ(back->view.seeAs, SeeAs::Deuteranopia);
  EXPECT_NE(json.find("\"see_as\": \"deuteranopia\""), std::string::npos);
  EXPECT_EQ(back->view.weight, WeightId::Wo);
  EXPECT_EQ(back->lessons.of<lessons::Pitfalls>().pitfall, 3);
  EXPECT_EQ(back->lessons.of<lessons::Lines>().hidden, (std::vector<std::uint8_t>{0, 1, 0}));
}

// The attention variants the window's controls set (N K/V heads, positions, RoPE base and pairing,
// window, sinks) come back from a saved workspace, with a variant's stage as the view; a workspace
// written before them (no such keys) opens as multi-head attention with sinusoidal codes.
TEST(Workspace, RoundTripKeepsTheAttentionVariants) {
  Workspace ws = sample();
  ws.config.dModel = 16;
  ws.config.heads = 8;
  ws.config.kvHeads = 2;
  ws.config.positions = false;
  ws.config.attnPositions = AttnPositions::Rope;
  ws.config.ropeBase = 500000.0f;
  ws.config.ropeStyle = RopeStyle::Interleaved;
  ws.config.window = 3;
  ws.config.sinks = 1;
  ws.view.stage = StageId::KRotated;
  const std::string json = workspaceToJson(ws);
  auto back = parseWorkspaceJson(json, "w.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(workspaceToJson(*back), json);
  EXPECT_EQ(back->config.kvHeads, 2);
  EXPECT_FALSE(back->config.positions);
  EXPECT_EQ(back->config.attnPositions, AttnPositions::Rope);
  EXPECT_EQ(back->config.ropeBase, 500000.0f);
  EXPECT_EQ(back->config.ropeStyle, RopeStyle::Interleaved);
  EXPECT_EQ(back->config.window, 3);
  EXPECT_EQ(back->config.sinks, 1);
  EXPECT_EQ(back->view.stage, StageId::KRotated);
  ws.config.attnPositions = AttnPositions::Alibi;  // ALiBi: no RoPE keys written, none needed back
  auto alibi = parseWorkspaceJson(workspaceToJson(ws), "w.json");
  ASSERT_TRUE(alibi) << alibi.error().message;
  EXPECT_EQ(alibi->config.attnPositions, AttnPositions::Alibi);
  EXPECT_EQ(workspaceToJson(ws).find("rope_base"), std::string::npos);

  // Before the variants: none of their keys.
  const std::string old = workspaceToJson(sample());
  // The config block only (the lessons keep choices of their own under similar names); keys are
  // written in sorted order, so "files" follows "config".
  const std::string oldConfig = old.substr(old.find("\"config\""), old.find("\"files\"") - old.find("\"config\""));
  for (const char* key : {"kv_heads", "attention_positions", "rope_base", "rope_style", "\"window\"", "sinks"}) {
    EXPECT_EQ(oldConfig.find(key), std::string::npos) << key;
  }
  auto plain = parseWorkspaceJson(old, "old.json");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->config.kvHeads, 0);
  EXPECT_TRUE(plain->config.positions);
  EXPECT_EQ(plain->config.attnPositions, AttnPositions::None);
  EXPECT_EQ(plain->config.window, 0);
  EXPECT_EQ(plain->config.sinks, 0);
  // A bad variant value names its key and the file.
  std::string bad = json;
  bad.replace(bad.find("\"rope_style\": \"interleaved\""), 27, "\"rope_style\": \"spiral\"");
  auto refused = parseWorkspaceJson(bad, "w.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("rope_style"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("w.json"), std::string::npos) << refused.error().message;
}

TEST(Workspace, StrictParsingNamesTheKeyAndTheFile) {
  const std::string good = workspaceToJson(sample());
  auto error = [](const std::string& text) {
    auto r = parseWorkspaceJson(text, "workspace 'w.json'");
    return r ? std::string("(accepted)") : r.error().message;
  };
  EXPECT_NE(error(good.substr(0, good.size() / 2)).find("workspace 'w.json': not valid JSON"), std::string::npos);
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_NE(error(edit("\"mhascope_workspace\": 1", "\"mhascope_workspace\": 2")).find("written by a newer mhascope"),
            std::string::npos);
  EXPECT_NE(error(edit("\"head\": 2", "\"head\": \"2\"")).find("/view/head must be an integer"), std::string::npos);
  EXPECT_NE(error(edit("\"head\": 2", "\"head\": -1")).find("/view/head"), std::string::npos);
  EXPECT_NE(error(edit("\"zoom\": 3.5", "\"zoom\": null")).find("/view/zoom/zoom must be a number"), std::string::npos);
  EXPECT_NE(error(edit("\"numbers\": true", "\"numbers\": true, \"extra\": 1")).find("unknown key /view/extra"),
            std::string::npos);
  EXPECT_NE(error(edit("\"numbers\": true", "\"numbers\": true, \"numbers\": false")).find("duplicate key 'numbers'"),
            std::string::npos);
  EXPECT_NE(error(edit("\"d_model\": 12", "\"d_model\": -12")).find("/config"), std::string::npos);
  EXPECT_NE(error(edit("\"see_as\": \"deuteranopia\"", "\"see_as\": \"sepia\"")).find("/view/see_as: unknown see-as 'sepia'"),
            std::string::npos);
  EXPECT_NE(error(edit("\"see_as\": \"deuteranopia\"", "\"see_as\": 2")).find("/view/see_as must be a string"),
            std::string::npos);
  // Written before the preview existed: no see_as key, normal vision.
  auto old = parseWorkspaceJson(edit("\"see_as\": \"deuteranopia\",", ""), "w.json");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->view.seeAs, SeeAs::Normal);
  EXPECT_NE(error("{\"mhascope_session\": 1}").find("not a mhascope workspace"), std::string::npos);
  EXPECT_NE(error("[1]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error(std::string(kMaxWorkspaceBytes + 1, ' ')).find("more than a workspace may hold"), std::string::npos);
  EXPECT_NE(error(std::string(100, '[') + std::string(100, ']')).find("nested deeper"), std::string::npos);
}

TEST(Workspace, InputFilesChangedMovedOrGone) {
  const fs::path d = freshDir("files");
  fs::create_directories(d / "a");
  writeBytes(d / "a" / "q.npy", "query bytes");
  writeBytes(d / "a" / "w.safetensors", "weight bytes");
  Workspace ws = sample();
  ws.files.query = (d / "a" / "q.npy").string();
  ws.files.weights = (d / "a" / "w.safetensors").string();
  const std::string wsPath = (d / "a" / "ws.json").string();
  auto rec = recordWorkspaceFiles(ws.files, wsPath);
  ASSERT_TRUE(rec) << rec.error().message;
  ws.fileRecords = *rec;
  EXPECT_EQ(ws.fileRecords["query"].sha256, sha256Hex("query bytes"));
  EXPECT_EQ(ws.fileRecords["query"].relativePath, "q.npy");
  ASSERT_TRUE(writeWorkspaceFile(wsPath, ws));
  // Never over an input, never without .json.
  EXPECT_NE(writeWorkspaceFile(ws.files.query, ws).error().message.find("would destroy that input"), std::string::npos);
  EXPECT_FALSE(writeWorkspaceFile((d / "a" / "ws.txt").string(), ws));

  auto loaded = readWorkspaceFile(wsPath);
  ASSERT_TRUE(loaded) << loaded.error().message;
  std::vector<std::string> notes;
  auto files = locateWorkspaceFiles(*loaded, wsPath, notes);
  ASSERT_TRUE(files) << files.error().message;
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(files->query, ws.files.query);

  // Same size, other bytes: refused by the hash.
  writeBytes(d / "a" / "q.npy", "QUERY bytes");
  auto changed = locateWorkspaceFiles(*loaded, wsPath, notes);
  ASSERT_FALSE(changed);
  EXPECT_NE(changed.error().message.find("changed since the workspace"), std::string::npos);
  EXPECT_NE(changed.error().message.find("q.npy"), std::string::npos);
  writeBytes(d / "a" / "q.npy", "query bytes");

  // The folder moved as a whole: found beside the workspace, and said.
  fs::rename(d / "a", d / "b");
  const std::string moved = (d / "b" / "ws.json").string();
  auto again = readWorkspaceFile(moved);
  ASSERT_TRUE(again);
  auto found = locateWorkspaceFiles(*again, moved, notes);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->query, (d / "b" / "q.npy").string());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("no longer at"), std::string::npos);

  // Gone.
  fs::remove(d / "b" / "w.safetensors");
  auto gone = locateWorkspaceFiles(*again, moved, notes);
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("moved or deleted"), std::string::npos);
  EXPECT_NE(gone.error().message.find("--weights"), std::string::npos);
  EXPECT_NE(gone.error().message.find("neither at"), std::string::npos);
  // Read from where it was saved, relative and absolute agree: that one place is named once.
  auto notThere = locateWorkspaceFiles(*loaded, wsPath, notes);
  ASSERT_FALSE(notThere);
  const std::string absent = (d / "a" / "q.npy").string();
  const std::string msg = notThere.error().message;
  EXPECT_NE(msg.find("it is not at '" + absent + "'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("neither"), std::string::npos) << msg;
  // A file the caller gives itself (a command line's --weights NEW) is neither looked for nor checked.
  auto replaced = locateWorkspaceFiles(*again, moved, notes, {"weights"});
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_EQ(replaced->query, (d / "b" / "q.npy").string());
  fs::remove_all(d);
}
