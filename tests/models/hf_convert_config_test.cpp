// A Hugging Face directory and the GGUF `ferrum convert` makes of it load to the same ModelConfig:
// both go through hf::model_config. The fixtures, and fixtures with edited config.json files
// where the loader and the converter used to disagree (rms_norm_eps, linear rope scaling,
// tie_word_embeddings, norm_topk_prob, sliding window, unsupported types).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "formats/convert_hf.h"
#include "model_test_util.h"
#include "models/registry.h"

namespace ferrum::test {
namespace {

namespace fs = std::filesystem;

// The config a loaded model runs with: decoders are built (the Llama-3 factors of a GGUF come
// from its rope_freqs.weight tensor then); BERT, an encoder, is compared as read.
ModelConfig loaded_config(const std::string& path) {
  ModelFiles files = open_model_files(path);
  if (files.config.arch == Arch::Bert) return files.config;
  ModelOptions opts;
  opts.n_threads = 1;
  return create_model(std::move(files.config), std::move(files.weights), opts)->config();
}

std::string convert(const std::string& dir) {
  const std::string out = temp_dir() + "/converted.gguf";
  convert_hf_to_gguf(dir, out);  // general.name: the directory name, as the loader names it
  return out;
}

// Field by field. What the conversion changes on purpose: llama/mistral Q/K rows are permuted to
// GGUF's adjacent pairs (rope_interleaved), and mistral is written as arch llama (as llama.cpp does).
void expect_same(const ModelConfig& hf, const ModelConfig& g, const std::string& what) {
  SCOPED_TRACE(what);
  const bool llama = hf.arch == Arch::Llama || hf.arch == Arch::Mistral;
  EXPECT_EQ(g.arch, hf.arch == Arch::Mistral ? Arch::Llama : hf.arch);
  EXPECT_EQ(g.rope_interleaved, llama ? true : hf.rope_interleaved);
  EXPECT_EQ(g.name, hf.name);
  EXPECT_EQ(g.n_layer, hf.n_layer);
  EXPECT_EQ(g.n_embd, hf.n_embd);
  EXPECT_EQ(g.n_head, hf.n_head);
  EXPECT_EQ(g.n_head_kv, hf.n_head_kv);
  EXPECT_EQ(g.head_dim, hf.head_dim);
  EXPECT_EQ(g.n_ff, hf.n_ff);
  EXPECT_EQ(g.n_vocab, hf.n_vocab);
  EXPECT_EQ(g.n_ctx_train, hf.n_ctx_train);
  EXPECT_EQ(g.norm_eps, hf.norm_eps);
  EXPECT_EQ(g.rope_theta, hf.rope_theta);
  EXPECT_EQ(g.rope_freq_scale, hf.rope_freq_scale);
  EXPECT_EQ(g.rope_freq_factors, hf.rope_freq_factors);  // bit for bit
  EXPECT_EQ(g.n_rot, hf.n_rot);
  EXPECT_EQ(g.sliding_window, hf.sliding_window);
  EXPECT_EQ(g.qkv_bias, hf.qkv_bias);
  EXPECT_EQ(g.qk_norm, hf.qk_norm);
  EXPECT_EQ(g.tied_embeddings, hf.tied_embeddings);
  EXPECT_EQ(g.n_expert, hf.n_expert);
  EXPECT_EQ(g.n_expert_used, hf.n_expert_used);
  EXPECT_EQ(g.n_ff_expert, hf.n_ff_expert);
  EXPECT_EQ(g.norm_topk_prob, hf.norm_topk_prob);
}

// The HF dir's and its converted GGUF's loaded configs compared; returns the HF one.
ModelConfig expect_round_trip(const std::string& dir, const std::string& what) {
  const ModelConfig hf = loaded_config(dir);
  expect_same(hf, loaded_config(convert(dir)), what);
  return hf;
}

// A copy of a fixture directory (files linked) with `edit` applied to its config.json.
std::string edited(const std::string& model, const std::string& sub,
                   const std::function<void(nlohmann::json&)>& edit) {
  const fs::path src = hf_dir(model, sub);
  const fs::path dir = fs::path(temp_dir()) / model;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "config.json") fs::create_symlink(e.path(), dir / e.path().filename());
  nlohmann::json cfg = load_json((src / "config.json").string());
  edit(cfg);
  std::ofstream(dir / "config.json") << cfg.dump(2);
  return dir.string();
}

TEST(HfConvertConfig, FixturesLoadTheSameAsTheirConversion) {
  for (const auto& [model, sub] :
       std::vector<std::pair<std::string, std::string>>{{"llama", "hf"},
                                                        {"llama3-ropescaled", "hf"},
                                                        {"qwen2", "hf"},
                                                        {"qwen3", "hf"},
                                                        {"qwen3moe", "hf-bf16"},
                                                        {"bert", "hf"}}) {
    const ModelConfig hf = expect_round_trip(hf_dir(model, sub), model);
    if (model == "llama3-ropescaled") EXPECT_EQ(hf.rope_freq_factors.size(), 32u);
  }
}

TEST(HfConvertConfig, MissingRmsNormEpsIsTheTransformersDefault) {
  // The converter required rms_norm_eps; the loader defaulted it to 1e-6.
  const ModelConfig hf =
      expect_round_trip(edited("llama", "hf", [](auto& c) { c.erase("rms_norm_eps"); }), "eps");
  EXPECT_FLOAT_EQ(hf.norm_eps, 1e-6f);
}

TEST(HfConvertConfig, LinearRopeScaling) {
  // The converter refused linear scaling (only llama3); the loader applied it.
  const ModelConfig hf = expect_round_trip(edited("llama", "hf",
                                                  [](auto& c) {
                                                    c["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
                                                  }),
                                           "linear");
  EXPECT_EQ(hf.rope_freq_scale, 0.25f);
}

TEST(HfConvertConfig, TiedEmbeddingsFollowTheConfig) {
  // The loader used lm_head.weight whenever present; the converter dropped it when tied.
  const ModelConfig hf =
      expect_round_trip(edited("llama", "hf", [](auto& c) { c["tie_word_embeddings"] = true; }), "tied");
  EXPECT_TRUE(hf.tied_embeddings);
}

TEST(HfConvertConfig, MoeNormTopkProb) {
  // The converted file always renormalised the top-k router weights (llama.cpp's rule).
  const ModelConfig hf = expect_round_trip(
      edited("qwen3moe", "hf-bf16", [](auto& c) { c["norm_topk_prob"] = false; }), "norm_topk");
  EXPECT_FALSE(hf.norm_topk_prob);
}

TEST(HfConvertConfig, MistralSlidingWindowDefault) {
  const ModelConfig hf =
      expect_round_trip(edited("llama", "hf", [](auto& c) { c["model_type"] = "mistral"; }), "mistral");
  EXPECT_EQ(hf.arch, Arch::Mistral);
  EXPECT_EQ(hf.sliding_window, 4096);
}

TEST(HfConvertConfig, UnsupportedValuesAreTheSameErrorFromBoth) {
  const std::function<void(nlohmann::json&)> edits[] = {
      [](nlohmann::json& c) {
        c["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
      },
      [](nlohmann::json& c) {
        c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", "two"}};
      },
      [](nlohmann::json& c) {
        c["model_type"] = "gemma";
        c["architectures"] = {"GemmaForCausalLM"};
      },
      [](nlohmann::json& c) { c["head_dim"] = 0; },
  };
  const std::string want[] = {
      "rope_scaling type 'dynamic' is not supported (supported: llama3, linear, longrope, yarn)",
      "rope_scaling.factor has type string, expected number", "unknown architecture 'gemma'",
      "config.json: head_dim is 0"};
  for (size_t i = 0; i < std::size(edits); ++i) {
    const std::string dir = edited("llama", "hf", edits[i]);
    const std::string load = error_of([&] { load_hf_dir(dir); });
    const std::string conv = error_of([&] { convert_hf_to_gguf(dir, dir + "/out.gguf"); });
    SCOPED_TRACE(want[i]);
    EXPECT_EQ(load, conv);
    EXPECT_NE(load.find(dir + "/config.json: "), std::string::npos) << load;
    EXPECT_NE(load.find(want[i]), std::string::npos) << load;
  }
}

}  // namespace
}  // namespace ferrum::test
