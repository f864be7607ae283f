// `ferrum bench` and the hidden `ferrum make-model`: JSON shape and plausibility of the numbers,
// batched decode, the roofline, a random-weight model that loads, runs and is reproducible, and
// clean errors for bad flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "kernels/cpu/matmul.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test {
namespace {

TEST(Bench, JsonReportsPromptAndGenerationSpeeds) {
  auto r = run_ferrum("bench '" + bundled_model() + "' -p 32 -n 16 -r 2 -t 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& pp = j["results"][0];
  const auto& tg = j["results"][1];
  EXPECT_EQ(pp["test"], "pp32");
  EXPECT_EQ(pp["n_prompt"], 32);
  EXPECT_EQ(tg["test"], "tg16");
  EXPECT_EQ(tg["n_gen"], 16);
  for (const auto* e : {&pp, &tg}) {
    ASSERT_EQ((*e)["samples_ts"].size(), 2u);
    EXPECT_GT((*e)["avg_ts"].get<double>(), 0.0);
    EXPECT_GE((*e)["stddev_ts"].get<double>(), 0.0);
    const double a = (*e)["samples_ts"][0], b = (*e)["samples_ts"][1];
    EXPECT_NEAR((*e)["avg_ts"].get<double>(), (a + b) / 2, 1e-6 * (a + b));
  }
  EXPECT_EQ(j["setup"]["threads"], 1);
  EXPECT_FALSE(j["setup"]["isa"].get<std::string>().empty());
  EXPECT_EQ(j["model"]["file_type"], "F32");
  EXPECT_EQ(j["model"]["n_layer"], 5);
  // stories260K: 5 layers, KV dim 32 (4 KV heads x 8), F16 K and V (the default).
  EXPECT_EQ(j["kv"]["type"], "f16");
  EXPECT_EQ(j["kv"]["bytes_per_token"], 5 * 2 * 32 * 2);
  EXPECT_GE(j["kv"]["pool_bytes"].get<int64_t>(), 5 * 2 * 32 * 2 * 32);
  // Tied embeddings: the whole file is read per token.
  EXPECT_EQ(j["model"]["weight_bytes_per_token"], j["model"]["weight_bytes"]);
}

TEST(Bench, BatchedDecodeAndRoofline) {
  auto r =
      run_ferrum("bench '" + bundled_model() +
                 "' -p 0 -n 8 -r 1 -t 1 --batch 1,3 --bandwidth 10 --kv-layout paged --kv-type f16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);  // tg8 and tg8 x3 (M=1 is the plain tg)
  EXPECT_EQ(j["results"][1]["test"], "tg8 x3");
  EXPECT_EQ(j["results"][1]["batch"], 3);
  const double ratio = j["results"][1]["ratio_to_batch1"];
  EXPECT_NEAR(ratio, j["results"][1]["avg_ts"].get<double>() / j["results"][0]["avg_ts"].get<double>(), 1e-9);
  EXPECT_EQ(j["kv"]["layout"], "paged");
  EXPECT_EQ(j["kv"]["bytes_per_token"], 5 * 2 * 32 * 2);  // F16
  // Roofline with a given bandwidth: 10 GB/s over the bytes a decode step reads.
  const double max_ts = j["roofline"]["max_decode_ts"];
  EXPECT_NEAR(max_ts, 10e9 / j["model"]["weight_bytes_per_token"].get<double>(), 1e-6 * max_ts);
  EXPECT_NEAR(j["results"][0]["roofline_fraction"].get<double>(),
              j["results"][0]["avg_ts"].get<double>() / max_ts, 1e-9);
  EXPECT_FALSE(j["roofline"]["measured"].get<bool>());
}

// FERRUM_KV_TYPE sets the KV type when --kv-type does not; an explicit --kv-type wins, f32 too.
TEST(Bench, KvTypeFromTheEnvironmentUnlessGiven) {
  setenv("FERRUM_KV_TYPE", "int8", 1);  // inherited by ferrum; CTest runs each test in its own process
  auto kv_of = [](const std::string& flags) {
    auto r = run_ferrum("bench '" + bundled_model() + "' -p 0 -n 2 -r 1 -t 1 --json" + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["kv"] : nlohmann::json();
  };
  const auto from_env = kv_of(""), given = kv_of(" --kv-type f32");
  unsetenv("FERRUM_KV_TYPE");
  EXPECT_EQ(from_env["type"], "int8");
  EXPECT_EQ(given["type"], "f32");
  EXPECT_EQ(given["bytes_per_token"], 5 * 2 * 32 * 4);
}

// -d: every test again at each depth (tokens prefilled untimed, as llama-bench's -d); the cache
// is sized for the deepest test, and batched rows compare with M=1 at their own depth.
TEST(Bench, DepthRunsEveryTestAfterAnUntimedPrefill) {
  auto r = run_ferrum("bench '" + bundled_model() + "' -p 16 -n 4 -r 1 -t 1 -d 0,40 --batch 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& e : j["results"]) names.push_back(e["test"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{"pp16", "tg4", "tg4 x2", "pp16 @ d40", "tg4 @ d40", "tg4 x2 @ d40"}));
  EXPECT_EQ(j["results"][3]["n_depth"], 40);
  EXPECT_EQ(j["results"][0]["n_depth"], 0);
  EXPECT_NEAR(j["results"][5]["ratio_to_batch1"].get<double>(),
              j["results"][5]["avg_ts"].get<double>() / j["results"][4]["avg_ts"].get<double>(), 1e-9);
  EXPECT_EQ(j["kv"]["capacity"], 40 + 16);  // depth + the longest test
  // A depth the cache cannot hold is one clear error.
  auto bad = run_ferrum("bench '" + bundled_model() + "' -p 16 -n 0 -r 1 -t 1 -d 64 --kv-capacity 32");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err.rfind("ferrum: error: ", 0), 0u) << bad.err;
  auto neg = run_ferrum("bench '" + bundled_model() + "' -p 16 -n 0 -r 1 -d -5");
  EXPECT_EQ(neg.exit_code, 1);
  EXPECT_NE(neg.err.find("--n-depth: expects a whole number from 0"), std::string::npos) << neg.err;
}

TEST(Bench, NoWarmupSkipsTheWarmUpRun) {
  auto r = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 2 -r 1 -t 1 -d 16 --no-warmup --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["setup"]["warmup"], false);
  EXPECT_EQ(j["results"].size(), 2u);
  auto text = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 0 -r 1 -t 1 --no-warmup");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1 repetitions (no warm-up)"), std::string::npos) << text.out;
  auto warm = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 0 -r 1 -t 1 --json");
  EXPECT_EQ(nlohmann::json::parse(warm.out)["setup"]["warmup"], true);
}

TEST(Bench, BatchLargerThanTheDefaultPoolFits) {
  // 6 contiguous sequences: more than the default pool of 4 sequences' capacity.
  auto r = run_ferrum("bench '" + bundled_model() + "' -p 0 -n 4 -r 1 -t 1 --batch 6 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["results"][1]["test"], "tg4 x6");
}

TEST(Bench, MeasuresBandwidthAndPrintsATable) {
  auto r = run_ferrum("bench '" + bundled_model() + "' -p 16 -n 4 -r 1 -t 1 --roofline");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"| pp16 ", "| tg4 ", "isa ", "read bandwidth", "% of the roofline", "bytes/token"})
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in:\n" << r.out;
}

TEST(Bench, BadFlagsAreCleanErrors) {
  for (const char* args : {" -p 0 -n 0", " -r 0", " --batch 0", " -p 8 -n 0 --batch 2"}) {
    auto r = run_ferrum("bench '" + bundled_model() + "'" + args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("ferrum: error: ", 0), 0u) << r.err;
  }
  auto r = run_ferrum("bench /nonexistent/model.gguf -p 4 -n 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
}

TEST(MakeModel, RandomModelLoadsRunsAndIsReproducible) {
  const std::string dir = temp_dir();
  const std::string a = dir + "/a.gguf", b = dir + "/b.gguf", c = dir + "/c.gguf";
  ASSERT_EQ(run_ferrum("make-model '" + a + "' --shape tiny --seed 7 -t 2").exit_code, 0);
  ASSERT_EQ(run_ferrum("make-model '" + b + "' --shape tiny --seed 7 -t 1").exit_code, 0);
  ASSERT_EQ(run_ferrum("make-model '" + c + "' --shape tiny --seed 8").exit_code, 0);
  EXPECT_EQ(read_text(a), read_text(b));  // independent of the thread count
  EXPECT_NE(read_text(a), read_text(c));

  auto f = gguf::File::open(a);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 512u);
  ASSERT_NE(f->find_tensor("blk.1.ffn_down.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.1.ffn_down.weight")->type, DType::F16);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied, as Llama-3.2-1B

  // The synthetic vocabulary tokenizes text and the random model generates from it.
  auto run = run_ferrum("run '" + a + "' --prompt 'hello world' -n 8 --temperature 0");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto q = run_ferrum("quantize '" + a + "' '" + dir + "/q.gguf' Q8_0");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto bench = run_ferrum("bench '" + dir + "/q.gguf' -p 8 -n 4 -r 1 --json");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_EQ(nlohmann::json::parse(bench.out)["model"]["file_type"], "Q8_0");
  fs::remove_all(dir);
}

TEST(MakeModel, QwenShapeHasBiasesAndUnknownShapeFails) {
  const std::string dir = temp_dir();
  auto r = run_ferrum("make-model '" + dir + "/q.gguf' --shape qwen-0.5b --layers 1 --vocab 400 --type F32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = gguf::File::open(dir + "/q.gguf");
  EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
  EXPECT_NE(f->find_tensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->ne[0], 896);
  EXPECT_EQ(f->find_tensor("blk.0.attn_k.weight")->ne[1], 128);  // 2 KV heads of 64
  auto e = run_ferrum("make-model '" + dir + "/x.gguf' --shape gpt5");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("gpt5"), std::string::npos) << e.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferrum::test

namespace ferrum::test {
namespace {

// `info` and `bench` name the kernel tier in use; FERRUM_ISA picks it, and a tier that does not
// exist is one clean error naming the variable.
TEST(Bench, InfoAndBenchNameTheKernelTier) {
  {
    ScopedEnv isa("FERRUM_ISA", "scalar");
    auto info = run_ferrum("info '" + bundled_model() + "' --json");
    ASSERT_EQ(info.exit_code, 0) << info.err;
    EXPECT_EQ(nlohmann::json::parse(info.out)["isa"], "scalar");
    auto text = run_ferrum("info '" + bundled_model() + "'");
    EXPECT_NE(text.out.find("kernels: scalar"), std::string::npos) << text.out;
    auto bench = run_ferrum("bench '" + bundled_model() + "' -p 4 -n 2 -r 1 -t 1 --no-warmup --json");
    ASSERT_EQ(bench.exit_code, 0) << bench.err;
    EXPECT_EQ(nlohmann::json::parse(bench.out)["setup"]["isa"], "scalar");
  }
  ScopedEnv bad("FERRUM_ISA", "sse9");
  auto r = run_ferrum("info '" + bundled_model() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ferrum: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sse9"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(kernels::isa_tiers().back()), std::string::npos)
      << "the message lists the tiers: " << r.err;
}

}  // namespace
}  // namespace ferrum::test

namespace ferrum::test {
namespace {

// --profile adds where each test's time went (per op kind and layer) after the table; FERRUM_PROFILE=1
// makes `run` print it at the end.
TEST(Bench, ProfileReportsOpsPerTest) {
  auto r = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 4 -r 1 -t 1 --no-warmup --profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile: pp8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profile: tg4 (4 forward passes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| matmul "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| attention "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per layer"), std::string::npos) << r.out;
  auto plain = run_ferrum("bench '" + bundled_model() + "' -p 8 -n 0 -r 1 -t 1 --no-warmup");
  EXPECT_EQ(plain.out.find("profile:"), std::string::npos) << "no profile unless asked for";
  ScopedEnv on("FERRUM_PROFILE", "1");
  auto run = run_ferrum("run '" + bundled_model() + "' --prompt 'Once' -n 4 --temperature 0");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("profile: run"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("| sampling "), std::string::npos) << run.err;
}

}  // namespace
}  // namespace ferrum::test
