// --precision on the command line: bf16 is accepted by run, eval, bench and embed and reaches the
// model (its logits and embeddings differ from fast's, by a BF16 rounding's worth); a bad value is
// refused naming the accepted ones.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferrum::test {
namespace {

std::vector<float> eval_logits(const std::string& precision) {
  const std::string dir = temp_dir();
  auto r = run_ferrum("eval '" + bundled_model() + "' --prompt 'Once upon a time' -t 2 --precision " +
                      precision + " --out '" + dir + "/topk.json' --logits-npy '" + dir + "/l.npy'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? load_npy(dir + "/l.npy").data : std::vector<float>{};
}

TEST(PrecisionCli, EvalBf16GivesRoundedWeightsLogits) {
  const auto fast = eval_logits("fast"), bf16 = eval_logits("bf16");
  ASSERT_EQ(fast.size(), bf16.size());
  ASSERT_FALSE(fast.empty());
  float max_diff = 0;
  for (size_t i = 0; i < fast.size(); ++i) max_diff = std::max(max_diff, std::fabs(fast[i] - bf16[i]));
  EXPECT_GT(max_diff, 0.0f) << "--precision bf16 changed nothing";
  EXPECT_LT(max_diff, 0.2f);
}

TEST(PrecisionCli, RunBenchAndEmbedAcceptBf16) {
  auto run =
      run_ferrum("run '" + bundled_model() + "' --prompt 'Once' -n 8 --temperature 0 -t 1 --precision bf16");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_FALSE(run.out.empty());
  auto bench = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 2 -r 1 -t 1 --json --precision bf16");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_EQ(nlohmann::json::parse(bench.out)["setup"]["precision"], "bf16");
  auto text = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 0 -r 1 -t 1 --precision bf16");
  EXPECT_NE(text.out.find("precision bf16"), std::string::npos) << text.out;
  auto embed = [](const std::string& p) {
    auto r = run_ferrum("embed '" + bundled_model() + "' 'a short text' --json -t 1 --precision " + p);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0
               ? nlohmann::json::parse(r.out)["embeddings"][0]["embedding"].get<std::vector<float>>()
               : std::vector<float>{};
  };
  const auto fast = embed("fast"), bf16 = embed("bf16");
  ASSERT_EQ(fast.size(), 64u);
  EXPECT_NE(fast, bf16);
}

TEST(PrecisionCli, BadValueIsRefused) {
  for (const std::string cmd : {"run", "bench", "embed"}) {
    auto r =
        run_ferrum(cmd + " '" + bundled_model() + "'" + (cmd == "embed" ? " x" : "") + " --precision fp8");
    EXPECT_NE(r.exit_code, 0) << cmd;
    EXPECT_NE(r.err.find("--precision"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("bf16"), std::string::npos) << cmd << ": " << r.err;
  }
}

}  // namespace
}  // namespace ferrum::test
