// `ferrum eval` with embedding rows in (--embeds-in) and hidden states out (--hidden-out): rows
// that are the ids' embedding rows (Model::embed_tokens, computed here in-process) give the same
// output as the ids, bit for bit; hidden states times the LM head are the logits; bad row files
// are one clear error naming the file. Also `ferrum embed` on a decoder (pooled hidden states).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ferrum/embeddings.h"
#include "formats/npy.h"
#include "lm_head_reference.h"
#include "loading/loader.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test {
namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

class EvalIo : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return dir_ + "/" + n; }
  std::string dir_;
};

// Longer than one forward chunk (max_batch 256) for stories260K, so the chunking is covered too.
TEST_F(EvalIo, EmbeddingRowsGiveTheSameOutputAsTheIdsBitwise) {
  struct Case {
    std::string model;
    int n;
  };
  for (const Case& c :
       {Case{bundled_model(), 300}, Case{data_path("models/qwen3/gguf/qwen3-Q8_0.gguf"), 24}}) {
    SCOPED_TRACE(c.model);
    ModelOptions o;
    o.n_threads = 2;
    LoadedModel lm = load_model(c.model, o);
    const int64_t d = lm.model->config().n_embd, V = lm.model->config().n_vocab;
    std::vector<int32_t> ids(c.n);
    for (int i = 0; i < c.n; ++i) ids[i] = static_cast<int32_t>((i * 37 + 1) % V);
    std::vector<float> rows(ids.size() * d);
    lm.model->embed_tokens(ids, rows.data());
    npy::write_f32(path("rows.npy"), rows, c.n, d);

    const std::string common = "eval '" + c.model + "' -t 2 --top-k 5 ";
    auto a = run_ferrum(common + "--tokens " + join(ids) + " --out " + path("a.json") + " --logits-npy " +
                        path("a_logits.npy") + " --hidden-out " + path("a_hidden.npy"));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b = run_ferrum(common + "--embeds-in " + path("rows.npy") + " --out " + path("b.json") +
                        " --logits-npy " + path("b_logits.npy") + " --hidden-out " + path("b_hidden.npy"));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(slurp(path("a_logits.npy")), slurp(path("b_logits.npy")));
    EXPECT_EQ(slurp(path("a_hidden.npy")), slurp(path("b_hidden.npy")));
    auto ja = nlohmann::json::parse(slurp(path("a.json"))), jb = nlohmann::json::parse(slurp(path("b.json")));
    EXPECT_EQ(ja["tokens"], nlohmann::json(ids));
    EXPECT_FALSE(jb.contains("tokens"));
    EXPECT_EQ(ja["n_positions"], c.n);
    EXPECT_EQ(jb["n_positions"], c.n);
    for (const char* key : {"top_ids", "top_logits", "logsumexp", "k"}) EXPECT_EQ(ja[key], jb[key]) << key;

    const auto hidden = npy::read_f32(path("a_hidden.npy"));
    EXPECT_EQ(hidden.shape, (std::vector<int64_t>{c.n, d}));
    EXPECT_EQ(npy::read_f32(path("a_logits.npy")).shape, (std::vector<int64_t>{c.n, V}));
  }
}

// Hidden states (after the final norm) times the output matrix, in float64, are the logits of
// the exact path up to summation order: |diff| <= 1e-4 x max(1, |logit|).
TEST_F(EvalIo, HiddenStatesTimesTheHeadAreTheLogits) {
  auto r = run_ferrum("eval '" + bundled_model() +
                      "' --precision exact -t 2 --prompt 'Once upon a time, there was' --out " +
                      path("o.json") + " --logits-npy " + path("l.npy") + " --hidden-out " + path("h.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto h = npy::read_f32(path("h.npy")), l = npy::read_f32(path("l.npy"));
  ASSERT_EQ(h.shape.size(), 2u);
  const int64_t n = h.shape[0], d = h.shape[1], V = l.shape[1];
  ASSERT_EQ(l.shape[0], n);
  const std::vector<double> want = times_lm_head(bundled_model(), h.data.data(), n, d);
  double worst = 0;
  for (int64_t i = 0; i < n * V; ++i)
    worst = std::max(worst, std::fabs(want[i] - l.data[i]) / std::max(1.0, std::fabs(want[i])));
  EXPECT_LE(worst, 1e-4);
}

TEST_F(EvalIo, BadRowFilesAreOneClearError) {
  const std::string f4 = "'descr': '<f4', 'fortran_order': False";
  const std::string row(64 * 4, '\0');  // one zero row of stories260K's width
  struct Bad {
    std::string bytes, needle;
  };
  const Bad cases[] = {
      {"not numpy at all", "bad magic"},
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 64), }", row + row), "'<f4'"},
      {npy_bytes("{" + f4 + ", 'shape': (64,), }", row), "2-D"},
      {npy_bytes("{" + f4 + ", 'shape': (1, 1, 64), }", row), "2-D"},
      {npy_bytes("{" + f4 + ", 'shape': (2, 32), }", row), "n_embd) is 64"},
      {npy_bytes("{" + f4 + ", 'shape': (0, 64), }", ""), "no rows"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 64), }", row), "Fortran order"},
      {npy_bytes("{" + f4 + ", 'shape': (2, 64), }", row), "the file has 256"},
  };
  for (const Bad& b : cases) {
    std::ofstream(path("bad.npy"), std::ios::binary) << b.bytes;
    auto r = run_ferrum("eval '" + bundled_model() + "' --embeds-in " + path("bad.npy") + " --out " +
                        path("o.json"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("ferrum: error: " + path("bad.npy") + ": ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(b.needle), std::string::npos) << "missing '" << b.needle << "' in: " << r.err;
  }
  auto r = run_ferrum("eval '" + bundled_model() + "' --tokens 1,2 --embeds-in " + path("bad.npy") +
                      " --out " + path("o.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("exactly one of --prompt, --tokens and --embeds-in"), std::string::npos) << r.err;
  r = run_ferrum("eval '" + bundled_model() + "' --embeds-in " + path("missing.npy") + " --out " +
                 path("o.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(path("missing.npy")), std::string::npos) << r.err;
}

TEST(EmbedCli, DecoderVectorsAreThePooledHiddenStates) {
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel lm = load_model(bundled_model(), o);
  const std::vector<std::string> texts = {"Once upon a time", "a red ball"};
  std::vector<std::vector<int32_t>> batch;
  for (const auto& t : texts) batch.push_back(lm.tokenizer->encode(t, true, false));
  for (const char* pooling : {"last", "mean"}) {
    for (bool raw : {false, true}) {
      auto r = run_ferrum("embed '" + bundled_model() +
                          "' 'Once upon a time' 'a red ball' -t 2 --json --pooling " + pooling +
                          (raw ? " --raw" : ""));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["pooling"], pooling);
      EXPECT_EQ(j["normalized"], !raw);
      EXPECT_EQ(j["dim"], 64);
      EmbedOptions eo;
      eo.pooling = parse_pooling(pooling);
      eo.normalize = !raw;
      const auto want = embeddings(*lm.model, batch, eo);
      for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(j["embeddings"][i]["n_tokens"], batch[i].size());
        EXPECT_EQ(j["embeddings"][i]["embedding"].get<std::vector<float>>(), want[i]) << pooling << " " << i;
      }
    }
  }
  auto r = run_ferrum("embed '" + bundled_model() + "' x --pooling cls");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a decoder has no CLS token"), std::string::npos) << r.err;
  r = run_ferrum("serve '" + bundled_model() + "' --pooling cls --port 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a decoder has no CLS token"), std::string::npos) << r.err;
}

// An encoder through the same command: the BERT fixture's vectors are embeddings()' with the
// model's own pooling (mean) and normalization (none); texts from a file (empty lines skipped)
// in batches of 2 give the same vectors as texts given as arguments, and --timings reports them.
TEST(EmbedCli, EncoderFromFileInBatchesEqualsArguments) {
  const std::string bert = data_path("models/bert/gguf/bert-Q8_0.gguf");
  const std::vector<std::string> texts = {"the cat sat on the mat", "a red ball", "hello world"};
  const std::string file = (std::filesystem::temp_directory_path() / "ferrum-embed-cli-texts.txt").string();
  std::ofstream(file) << texts[0] << "\n\n" << texts[1] << "\r\n" << texts[2];
  auto a =
      run_ferrum("embed '" + bert + "' '" + texts[0] + "' '" + texts[1] + "' '" + texts[2] + "' -t 2 --json");
  auto b = run_ferrum("embed '" + bert + "' -f '" + file + "' --batch 2 --timings -t 2 --json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["pooling"], "mean");
  EXPECT_EQ(ja["normalized"], false);
  EXPECT_EQ(ja["dim"], 128);
  EXPECT_EQ(ja["embeddings"], jb["embeddings"]);
  EXPECT_NE(b.err.find("embed: 3 sentences"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("(batch 2)"), std::string::npos) << b.err;
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel lm = load_model(bert, o);
  std::vector<std::vector<int32_t>> batch;
  for (const auto& t : texts) batch.push_back(lm.tokenizer->encode(t, true, false));
  const auto want = embeddings(*lm.model, batch);
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(ja["embeddings"][i]["embedding"].get<std::vector<float>>(), want[i]) << i;
  auto r = run_ferrum("embed '" + bert + "' -f ''");
  EXPECT_EQ(r.exit_code, 1);
  r = run_ferrum("embed '" + bert + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no text to embed"), std::string::npos) << r.err;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace ferrum::test
