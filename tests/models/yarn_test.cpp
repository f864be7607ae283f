// YaRN RoPE scaling (Qwen2.5/Qwen3 long-context configs, gpt-oss): config.json's rope_scaling read as
// transformers reads it, the per-pair frequencies and the attention factor equal to a float64
// numpy computation of transformers' _compute_yarn_parameters (tests/data/rope/yarn.json); GGUF
// files carry llama.cpp's keys and give the same model; factor 1 changes nothing, bit for bit.
#include "models/yarn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "formats/convert_hf.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/hf_model_config.h"
#include "formats/model_config_gguf.h"
#include "model_test_util.h"

namespace ferrum {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

ModelConfig from_hf(const json& c) {
  json j = {{"model_type", "qwen2"},
            {"hidden_size", 2 * c["head_dim"].get<int>()},
            {"intermediate_size", 16},
            {"num_hidden_layers", 1},
            {"num_attention_heads", 2},
            {"vocab_size", 12},
            {"rope_theta", c["rope_theta"]},
            {"max_position_embeddings", c["max_position_embeddings"]},
            {"rope_scaling", c["rope_scaling"]}};
  return hf::model_config(hf::Config::from_json(j, "dir/config.json"), "m");
}

TEST(Yarn, FrequenciesAndAttentionFactorAsTransformers) {
  const json cases = test::load_json(test::data_path("rope/yarn.json"));
  ASSERT_EQ(cases.size(), 6u);
  for (const json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const ModelConfig m = from_hf(c);
    ASSERT_GT(m.yarn.factor, 0);
    const std::vector<float> ff = yarn_freq_factors(m);
    const std::vector<double> want = c["inv_freq"];
    ASSERT_EQ(ff.size(), want.size());
    for (size_t i = 0; i < ff.size(); ++i) {
      // What the forward pass uses: base frequency (float32, as rope_cache) / divisor.
      const double base = std::pow(m.rope_theta, -2.0 * static_cast<double>(i) / m.n_rot);
      EXPECT_NEAR(base / ff[i], want[i], 2e-6 * want[i]) << "pair " << i;
    }
    EXPECT_NEAR(yarn_attn_factor(m), c["attention_factor"].get<double>(), 1e-6);
    // Through GGUF (llama.cpp's keys) and back: the same parameters but truncation, which llama.cpp
    // always applies.
    gguf::Writer w;
    w.set_string("general.architecture", "qwen2");
    write_model_config(w, m);
    const std::vector<float> embd(static_cast<size_t>(m.n_embd) * m.n_vocab, 0.0f);
    w.add_tensor("token_embd.weight", DType::F32, {m.n_embd, m.n_vocab}, embd.data(), embd.size() * 4);
    const std::string path = test::temp_dir() + "/yarn.gguf";
    w.write(path);
    const ModelConfig g = config_from_gguf(*gguf::File::open(path));
    EXPECT_EQ(g.yarn.factor, m.yarn.factor);
    EXPECT_EQ(g.yarn.orig_ctx, m.yarn.orig_ctx);
    EXPECT_EQ(g.yarn.beta_fast, m.yarn.beta_fast);
    EXPECT_NEAR(yarn_attn_factor(g), yarn_attn_factor(m), 1e-6);
    if (m.yarn.truncate) EXPECT_EQ(yarn_freq_factors(g), ff);
  }
}

TEST(Yarn, BadConfigsNameTheField) {
  json c = {{"head_dim", 8},
            {"rope_theta", 10000.0},
            {"max_position_embeddings", 4096},
            {"rope_scaling", {{"type", "yarn"}}}};
  EXPECT_NE(test::error_of([&] { from_hf(c); }).find("rope_scaling.factor is missing"), std::string::npos);
  c["rope_scaling"]["factor"] = 0.5;
  EXPECT_NE(test::error_of([&] { from_hf(c); }).find("rope_scaling.factor must be a number >= 1"),
            std::string::npos);
  c["rope_scaling"]["factor"] = 4;
  c["rope_scaling"]["beta_fast"] = -1;
  EXPECT_NE(test::error_of([&] { from_hf(c); }).find("rope_scaling.beta_fast must be a positive number"),
            std::string::npos);
  c["rope_scaling"].erase("beta_fast");
  c["rope_scaling"]["truncate"] = "no";
  EXPECT_NE(test::error_of([&] { from_hf(c); }).find("rope_scaling.truncate must be true or false"),
            std::string::npos);
}

// The qwen2 fixture directory with a rope_scaling of its own.
std::string qwen2_with(const json& rope_scaling) {
  const fs::path src = test::hf_dir("qwen2", "hf");
  const fs::path dir = fs::path(test::temp_dir()) / "qwen2-yarn";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "config.json") fs::create_symlink(e.path(), dir / e.path().filename());
  json cfg = test::load_json((src / "config.json").string());
  cfg["rope_scaling"] = rope_scaling;
  std::ofstream(dir / "config.json") << cfg.dump();
  return dir.string();
}

TEST(Yarn, ModelsRunWithItFromHfAndGguf) {
  const auto ids = test::prompt_ids("qwen2", "p3");
  auto plain = test::open_model(test::hf_dir("qwen2", "hf"), Precision::Exact);
  const std::vector<float> base = test::all_logits(*plain, ids);
  {  // factor 1: nothing scaled, bit for bit
    auto one = test::open_model(qwen2_with({{"type", "yarn"}, {"factor", 1.0}}), Precision::Exact);
    EXPECT_EQ(test::all_logits(*one, ids), base);
  }
  // factor 4 over an original context of 16 (the prompt reaches past it): other logits, and the
  // converted GGUF's (llama.cpp's keys) are the same model.
  const std::string dir =
      qwen2_with({{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 16}});
  auto hf = test::open_model(dir, Precision::Exact);
  const std::vector<float> scaled = test::all_logits(*hf, ids);
  EXPECT_NE(scaled, base);
  const std::string gguf = test::temp_dir() + "/qwen2-yarn.gguf";
  convert_hf_to_gguf(dir, gguf);
  auto g = test::open_model(gguf, Precision::Exact);
  const std::vector<float> from_gguf = test::all_logits(*g, ids);
  ASSERT_EQ(from_gguf.size(), scaled.size());
  double err = 0;
  for (size_t i = 0; i < scaled.size(); ++i) err = std::max(err, double(std::fabs(from_gguf[i] - scaled[i])));
  EXPECT_LT(err, 1e-3);
}

}  // namespace
}  // namespace ferrum
