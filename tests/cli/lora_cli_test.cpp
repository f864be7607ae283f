// `--lora PATH[:scale]` on the command line: `eval` gives the float64 merged reference's logits
// (tests/data/lora, make_lora.py; with an F32 KV cache, to the F32 tolerance), several adapters are summed
// with their scales, `run` generates with one, `bench --lora-each` spreads distinct adapters over the batch,
// and a bad adapter is one `ferrum: error:` line naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test {
namespace {

std::string ref_tokens() {
  std::ifstream f(data_path("models/llama/reference.json"));
  const auto j = nlohmann::json::parse(f);
  std::string s;
  for (const auto& p : j["prompts"])
    if (p["id"] == "p3")
      for (int i = 0; i < 16; ++i) s += (i ? "," : "") + std::to_string(p["token_ids"][i].get<int>());
  return s;
}

double max_diff(const std::string& npy, const std::string& ref) {
  const Npy a = load_npy(npy), b = load_npy(data_path("lora/" + ref));
  EXPECT_EQ(a.data.size(), b.data.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i)
    worst = std::max(worst, std::fabs(double(a.data[i]) - b.data[i]));
  return worst;
}

class LoraCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string eval(const std::string& loras) {
    const std::string npy = dir_ + "/logits.npy";
    auto r = run_ferrum("eval '" + unxz("models/llama/gguf/llama-F32.gguf") +
                        "' --precision exact --tokens " + ref_tokens() + " --out " + dir_ +
                        "/out.json --logits-npy " + npy + " -t 2 --kv-type f32 " + loras);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return npy;
  }
  std::string lora(const std::string& rel) const { return "--lora '" + data_path("lora/" + rel) + "'"; }
  std::string dir_;
};

TEST_F(LoraCli, EvalGivesTheMergedReference) {
  EXPECT_LE(max_diff(eval(lora("llama-a")), "llama/ref_a.npy"), 1e-4);
  EXPECT_LE(max_diff(eval(lora("llama-a.gguf")), "llama/ref_a.npy"), 1e-4);
  EXPECT_LE(max_diff(eval(lora("llama-a:0.5") + " " + lora("llama-b") + " " + lora("llama-c")),
                     "llama/ref_sum.npy"),
            1e-4);
  EXPECT_GT(max_diff(eval(""), "llama/ref_a.npy"), 0.5);  // without it: far off
}

// export-lora merges into the base's F32 weights: the merged file alone gives the reference.
TEST_F(LoraCli, ExportLoraMergesIntoTheBase) {
  const std::string merged = dir_ + "/merged.gguf";
  auto r = run_ferrum("export-lora '" + unxz("models/llama/gguf/llama-F32.gguf") + "' " + merged + " " +
                      lora("llama-a:0.5") + " " + lora("llama-b") + " " + lora("llama-c"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("14 tensors merged"), std::string::npos) << r.err;
  const std::string npy = dir_ + "/m.npy";
  auto e = run_ferrum("eval " + merged + " --precision exact --tokens " + ref_tokens() + " --out " + dir_ +
                      "/o.json --logits-npy " + npy + " -t 2 --kv-type f32");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_LE(max_diff(npy, "llama/ref_sum.npy"), 1e-4);
  auto bad = run_ferrum("export-lora '" + data_path("models/qwen3/gguf/qwen3-Q8_0.gguf") + "' " + merged +
                        " " + lora("llama-a.gguf"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("'qwen3'"), std::string::npos) << bad.err;
}

TEST_F(LoraCli, RunGeneratesWithTheAdapter) {
  const std::string model = "'" + data_path("models/llama/gguf/llama-Q8_0.gguf") + "'";
  const std::string args = " --prompt 'Once upon a time' -n 12 --temperature 0 -t 2";
  auto base = run_ferrum("run " + model + args);
  auto with = run_ferrum("run " + model + args + " " + lora("llama-a"));
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_NE(base.out, with.out);  // the adapter changes the greedy continuation
  auto again = run_ferrum("run " + model + args + " " + lora("llama-a.gguf"));
  EXPECT_EQ(again.out, with.out);  // the other form: the same text
}

TEST_F(LoraCli, BenchSpreadsDistinctAdaptersOverTheBatch) {
  auto r = run_ferrum("bench '" + data_path("models/llama/gguf/llama-Q8_0.gguf") +
                      "' -p 8 -n 2 -r 1 -t 1 --batch 4 " + "--lora-each '" + data_path("lora/llama-a") +
                      "' --lora-each '" + data_path("lora/llama-b") + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["lora"].size(), 2u);
  EXPECT_EQ(j["lora"][0]["name"], "llama-a");
  EXPECT_GT(j["lora"][1]["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["results"].size(), 3u);  // pp8, tg2, tg2 x4
}

TEST_F(LoraCli, ABadAdapterIsOneErrorLine) {
  const std::string model = "'" + data_path("models/qwen3/gguf/qwen3-Q8_0.gguf") + "'";
  auto r = run_ferrum("eval " + model + " --tokens 1,2,3 --out " + dir_ + "/o.json " + lora("llama-a.gguf"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("ferrum: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("llama-a.gguf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'qwen3'"), std::string::npos) << r.err;
  auto missing = run_ferrum("run " + model + " --prompt hi -n 1 --lora /nonexistent/x");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/x"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace ferrum::test
