// config.json -> ModelConfig (hf::model_config, shared by the HF loader and `ferrum convert`):
// transformers' defaults, rope_scaling types and errors naming the file and the field.
#include "formats/hf_model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "formats/family_fields.h"
#include "formats/model_config_gguf.h"
#include "test_util.h"

namespace ferrum::hf {
namespace {

using test::error_of;

nlohmann::json base(const std::string& model_type) {
  return {{"model_type", model_type}, {"hidden_size", 8},         {"intermediate_size", 16},
          {"num_hidden_layers", 1},   {"num_attention_heads", 2}, {"vocab_size", 12}};
}

ModelConfig read(const nlohmann::json& j) {
  return model_config(Config::from_json(j, "dir/config.json"), "m");
}

TEST(HfModelConfig, TransformersDefaults) {
  const ModelConfig m = read(base("llama"));
  EXPECT_EQ(m.arch, Arch::Llama);
  EXPECT_EQ(m.name, "m");
  EXPECT_FLOAT_EQ(m.norm_eps, 1e-6f);  // was required by the converter
  EXPECT_EQ(m.rope_theta, 10000.0f);
  EXPECT_EQ(m.n_head_kv, 2);
  EXPECT_EQ(m.head_dim, 4);
  EXPECT_EQ(m.n_rot, 4);
  EXPECT_EQ(m.n_ctx_train, 2048);  // LlamaConfig; the converter required the field
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_FALSE(m.rope_interleaved);
  EXPECT_EQ(m.sliding_window, 0);
  EXPECT_EQ(read(base("qwen2")).n_ctx_train, 32768);
  EXPECT_TRUE(read(base("qwen2")).qkv_bias);
  EXPECT_TRUE(read(base("qwen3")).qk_norm);
  EXPECT_EQ(read(base("mistral")).n_ctx_train, 131072);
}

TEST(HfModelConfig, SlidingWindow) {
  nlohmann::json j = base("mistral");
  EXPECT_EQ(read(j).sliding_window, 4096);  // MistralConfig's default
  j["sliding_window"] = nullptr;
  EXPECT_EQ(read(j).sliding_window, 0);  // null: no window
  j["sliding_window"] = 32;
  EXPECT_EQ(read(j).sliding_window, 32);
  j = base("qwen2");
  j["sliding_window"] = 32;
  EXPECT_EQ(read(j).sliding_window, 0);  // only with use_sliding_window
  j["use_sliding_window"] = true;
  EXPECT_EQ(read(j).sliding_window, 32);
}

TEST(HfModelConfig, SmolLM3RopeLayers) {
  nlohmann::json j = base("smollm3");
  j["num_hidden_layers"] = 8;
  const ModelConfig every4 = read(j);  // transformers' default interval: 4
  EXPECT_EQ(every4.arch, Arch::SmolLM3);
  EXPECT_EQ(every4.rope_layers, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(every4.rope_layers, smollm3_rope_layers(8));  // what llama.cpp assumes for smollm3 files
  j["no_rope_layer_interval"] = 2;
  EXPECT_EQ(read(j).rope_layers, (std::vector<uint8_t>{1, 0, 1, 0, 1, 0, 1, 0}));
  j["no_rope_layers"] = {1, 1, 0, 1, 1, 1, 1, 1};  // the list wins
  const ModelConfig listed = read(j);
  EXPECT_FALSE(listed.layer_uses_rope(2));
  EXPECT_TRUE(listed.layer_uses_rope(3));
  gguf::Writer w;
  EXPECT_NE(error_of([&] { write_model_config(w, listed); }).find("not every 4th layer"), std::string::npos);
  j["no_rope_layers"] = {1, 1};
  EXPECT_NE(error_of([&] { read(j); }).find("dir/config.json: no_rope_layers must be a list of 8 numbers"),
            std::string::npos);
  j["no_rope_layers"] = {1, 1, 2, 1, 1, 1, 1, 1};
  EXPECT_NE(error_of([&] { read(j); }).find("no_rope_layers holds 2, expected 0 or 1"), std::string::npos);
}

TEST(HfModelConfig, Phi3LongRopeAndPartialRotary) {
  nlohmann::json j = base("phi3");  // head_dim 4
  j["hidden_size"] = 16;            // 2 heads of 8
  j["partial_rotary_factor"] = 0.5;
  j["max_position_embeddings"] = 1024;
  j["original_max_position_embeddings"] = 256;
  j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {2.0, 3.0}}, {"short_factor", {1.0, 1.5}}};
  const ModelConfig m = read(j);
  EXPECT_EQ(m.arch, Arch::Phi3);
  EXPECT_EQ(m.n_rot, 4);
  EXPECT_EQ(m.longrope.long_factors, (std::vector<float>{2.0f, 3.0f}));
  EXPECT_EQ(m.longrope.orig_ctx, 256);
  EXPECT_FLOAT_EQ(m.longrope.attn_factor, static_cast<float>(std::sqrt(1 + std::log(4.0) / std::log(256.0))));
  j["rope_scaling"]["attention_factor"] = 1.5;  // given explicitly
  EXPECT_FLOAT_EQ(read(j).longrope.attn_factor, 1.5f);
  j["rope_scaling"]["long_factor"] = {2.0};
  EXPECT_NE(error_of([&] { read(j); }).find("rope_scaling.long_factor must be a list of 2 numbers"),
            std::string::npos);
  j["rope_scaling"]["long_factor"] = {2.0, -1.0};
  EXPECT_NE(error_of([&] { read(j); }).find("rope_scaling.long_factor holds -1.0, expected positive"),
            std::string::npos);
  j["partial_rotary_factor"] = 1.5;
  EXPECT_NE(error_of([&] { read(j); }).find("partial_rotary_factor is 1.5"), std::string::npos);
}

TEST(HfModelConfig, Gemma2) {
  nlohmann::json j = base("gemma2");  // 1 layer, head_dim 4
  j["num_hidden_layers"] = 4;
  j["query_pre_attn_scalar"] = 16;
  j["attn_logit_softcapping"] = 50.0;
  j["final_logit_softcapping"] = 30.0;
  const ModelConfig m = read(j);
  EXPECT_EQ(m.arch, Arch::Gemma2);
  EXPECT_TRUE(m.tied_embeddings);  // Gemma2Config's default
  EXPECT_TRUE(m.post_norms);
  EXPECT_EQ(m.ffn_act, ModelConfig::Activation::GeluTanh);
  EXPECT_FLOAT_EQ(m.embed_scale, std::sqrt(8.0f));
  EXPECT_FLOAT_EQ(m.attn_scale, 0.25f);
  EXPECT_EQ(m.attn_softcap, 50.0f);
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_EQ(m.swa_layers, (std::vector<uint8_t>{1, 0, 1, 0}));
  j["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "sliding_attention"};
  const ModelConfig odd = read(j);
  EXPECT_EQ(odd.swa_layers, (std::vector<uint8_t>{0, 1, 0, 1}));
  gguf::Writer w;  // llama.cpp's gemma2 files window the even layers
  EXPECT_NE(error_of([&] { write_model_config(w, odd); }).find("not all but every 2th"), std::string::npos);
  j["layer_types"] = {"full_attention"};
  EXPECT_NE(error_of([&] { read(j); }).find("layer_types has 1 entries for 4 layers"), std::string::npos);
  j.erase("layer_types");
  j["hidden_activation"] = "relu";
  EXPECT_NE(error_of([&] { read(j); }).find("hidden_activation 'relu' is not supported"), std::string::npos);
}

TEST(HfModelConfig, Gemma3) {
  nlohmann::json j = base("gemma3_text");
  j["num_hidden_layers"] = 12;
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  const ModelConfig m = read(j);
  EXPECT_EQ(m.arch, Arch::Gemma3);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_EQ(m.attn_softcap, 0.0f);
  EXPECT_EQ(m.rope_theta, 1e6f);               // Gemma3TextConfig's default
  EXPECT_EQ(m.rope_theta_swa, 10000.0f);       // rope_local_base_freq's
  EXPECT_FLOAT_EQ(m.rope_freq_scale, 0.125f);  // the global layers'
  std::vector<uint8_t> five_of_six(12, 1);
  five_of_six[5] = five_of_six[11] = 0;
  EXPECT_EQ(m.swa_layers, five_of_six);
  j["sliding_window_pattern"] = 3;
  EXPECT_EQ(read(j).swa_layers, (std::vector<uint8_t>{1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0}));
}

TEST(HfModelConfig, RopeScaling) {
  nlohmann::json j = base("llama");
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};  // legacy key
  EXPECT_EQ(read(j).rope_freq_scale, 0.25f);
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(read(j).rope_freq_scale, 1.0f);
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  EXPECT_EQ(read(j).rope_freq_factors.size(), 2u);
  j["rope_scaling"] = {{"type", "linear"}, {"rope_type", "dynamic"}, {"factor", 4.0}};  // rope_type wins
  EXPECT_EQ(
      error_of([&] { read(j); }),
      "dir/config.json: rope_scaling type 'dynamic' is not supported (supported: llama3, linear, longrope, "
      "yarn)");
  j["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_EQ(error_of([&] { read(j); }),
            "dir/config.json: rope_scaling.factor is missing (required for rope type 'linear')");
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", -1}};
  EXPECT_EQ(error_of([&] { read(j); }),
            "dir/config.json: rope_scaling.factor must be a positive number, got -1");
}

TEST(HfModelConfig, Errors) {
  nlohmann::json j = base("llama");
  j.erase("intermediate_size");
  EXPECT_EQ(error_of([&] { read(j); }), "dir/config.json: field 'intermediate_size' is missing");
  j = base("qwen3_moe");
  j.erase("intermediate_size");  // unused by a MoE model
  j.update({{"num_experts", 4}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 4}});
  EXPECT_EQ(read(j).n_ff, 0);
  EXPECT_FALSE(read(j).norm_topk_prob);  // Qwen3MoeConfig's default
  j["mlp_only_layers"] = {0};
  EXPECT_EQ(error_of([&] { read(j); }),
            "dir/config.json: mlp_only_layers (dense layers in a MoE model) is not supported");
  j = base("gemma");
  EXPECT_NE(error_of([&] { read(j); }).find("dir/config.json: unknown architecture 'gemma'"),
            std::string::npos);
  j = base("llama");
  j["rms_norm_eps"] = "small";
  EXPECT_EQ(error_of([&] { read(j); }),
            "dir/config.json: field 'rms_norm_eps' has type string, expected number");
  j = base("llama");
  j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 3;
  EXPECT_EQ(error_of([&] { read(j); }),
            "dir/config.json: num_attention_heads 4 is not a multiple of num_key_value_heads 3");
}

}  // namespace
}  // namespace ferrum::hf
