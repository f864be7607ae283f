// Hugging Face dir -> GGUF: the llama fixture against llama.cpp-layout reference data, plus small
// synthetic models for the Q/K permutation, qwen2/qwen3 mapping, BF16 shards, Llama-3 rope_freqs
// and error cases.
#include "formats/convert_hf.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/fp16.h"
#include "formats/gguf.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::convert_hf_test {
namespace {
namespace fs = std::filesystem;
using test::error_of;

std::string type_string(const gguf::File& f, const std::string& k) {
  std::string s = gguf::value_type_name(f.type_of(k));
  if (f.type_of(k) == gguf::ValueType::ARRAY)
    s += std::string("[") + gguf::value_type_name(f.array_type_of(k)) + "]";
  return s;
}

// tests/data/formats/hf/llama (model.safetensors is stored as .xz) assembled in a temp dir.
std::string llama_fixture_dir() {
  const std::string dir = test::temp_dir() + "/llama";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(test::data_path(std::string("formats/hf/llama/") + f), dir + "/" + f);
  fs::create_symlink(test::unxz("formats/hf/llama/model.safetensors"), dir + "/model.safetensors");
  return dir;
}

TEST(ConvertHf, LlamaFixtureMatchesReference) {
  const std::string out = test::temp_dir() + "/llama.gguf";
  convert_hf_to_gguf(llama_fixture_dir(), out);
  const auto f = gguf::File::open(out);
  const auto ref =
      nlohmann::json::parse(test::read_file(test::data_path("formats/hf/llama-F32.reference.json")));

  std::vector<std::string> ref_keys;
  for (const auto& kv : ref["metadata"]) {
    const std::string k = kv["key"];
    if (k == "general.description") continue;
    ref_keys.push_back(k);
    ASSERT_TRUE(f->has(k)) << k;
    EXPECT_EQ(type_string(*f, k), kv["type"].get<std::string>()) << k;
    EXPECT_EQ(f->value_json(k), kv["value"]) << k;
  }
  EXPECT_EQ(f->keys(), ref_keys);  // same keys in the same order, nothing extra

  // Same tensors, order, types, shapes and bytes: Q/K permuted, everything else copied.
  ASSERT_EQ(f->tensors().size(), ref["tensors"].size());
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    const TensorView& t = f->tensors()[i];
    const auto& r = ref["tensors"][i];
    EXPECT_EQ(t.name, r["name"].get<std::string>());
    EXPECT_EQ(std::string(dtype_name(t.type)), r["type"].get<std::string>()) << t.name;
    EXPECT_EQ(std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
              r["ne"].get<std::vector<int64_t>>())
        << t.name;
    EXPECT_EQ(fmt::format("{:016x}", test::fnv1a64(t.data, t.nbytes)), r["fnv1a64"].get<std::string>())
        << t.name;
  }
}

// A tiny synthetic HF model. Every value encodes its (row, col) so permutations are visible.
struct Synth {
  std::string dir;
  nlohmann::json config;
  std::vector<test::StTensor> tensors;

  void add(const std::string& name, std::vector<int64_t> shape, bool bf16 = false) {
    const int64_t rows = shape.size() == 1 ? 1 : shape[0], cols = shape.back();
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        v[r * cols + c] = static_cast<float>(r * 1000 + c + tensors.size() * 100000);
    if (shape.size() == 1)
      for (int64_t c = 0; c < cols; ++c) v[c] = static_cast<float>(c + tensors.size() * 100000);
    if (bf16) {
      std::vector<uint16_t> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) b[i] = f32_to_bf16(v[i] / 64.0f);
      tensors.push_back({name, "BF16", shape, test::bytes_of(b)});
    } else {
      tensors.push_back({name, "F32", shape, test::bytes_of(v)});
    }
  }
  void write(int shards = 1) {
    dir = test::temp_dir() + "/model";
    fs::create_directories(dir);
    std::ofstream(dir + "/config.json") << config.dump(2);
    if (shards == 1) {
      test::write_safetensors(dir + "/model.safetensors", tensors);
      return;
    }
    nlohmann::json wm = nlohmann::json::object();
    for (int s = 0; s < shards; ++s) {
      std::vector<test::StTensor> part;
      const std::string fname = fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, shards);
      for (size_t i = s; i < tensors.size(); i += shards) {
        part.push_back(tensors[i]);
        wm[tensors[i].name] = fname;
      }
      test::write_safetensors(dir + "/" + fname, part);
    }
    std::ofstream(dir + "/model.safetensors.index.json") << nlohmann::json{{"weight_map", wm}}.dump();
  }
};

Synth small_model(const std::string& model_type, int64_t head_dim = 4, int64_t n_head = 2, int64_t n_kv = 1,
                  bool bf16 = false, bool bias = false, bool qk_norm = false) {
  Synth s;
  const int64_t embd = 8, ff = 16, vocab = 12;
  s.config = {{"model_type", model_type},
              {"hidden_size", embd},
              {"intermediate_size", ff},
              {"num_hidden_layers", 1},
              {"num_attention_heads", n_head},
              {"num_key_value_heads", n_kv},
              {"head_dim", head_dim},
              {"vocab_size", vocab},
              {"max_position_embeddings", 64},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 1e6},
              {"tie_word_embeddings", true}};
  s.add("model.embed_tokens.weight", {vocab, embd}, bf16);
  s.add("model.layers.0.input_layernorm.weight", {embd}, bf16);
  s.add("model.layers.0.self_attn.q_proj.weight", {n_head * head_dim, embd}, bf16);
  s.add("model.layers.0.self_attn.k_proj.weight", {n_kv * head_dim, embd}, bf16);
  s.add("model.layers.0.self_attn.v_proj.weight", {n_kv * head_dim, embd}, bf16);
  if (bias) {
    s.add("model.layers.0.self_attn.q_proj.bias", {n_head * head_dim}, bf16);
    s.add("model.layers.0.self_attn.k_proj.bias", {n_kv * head_dim}, bf16);
    s.add("model.layers.0.self_attn.v_proj.bias", {n_kv * head_dim}, bf16);
  }
  if (qk_norm) {
    s.add("model.layers.0.self_attn.q_norm.weight", {head_dim}, bf16);
    s.add("model.layers.0.self_attn.k_norm.weight", {head_dim}, bf16);
  }
  s.add("model.layers.0.self_attn.o_proj.weight", {embd, n_head * head_dim}, bf16);
  s.add("model.layers.0.post_attention_layernorm.weight", {embd}, bf16);
  s.add("model.layers.0.mlp.gate_proj.weight", {ff, embd}, bf16);
  s.add("model.layers.0.mlp.up_proj.weight", {ff, embd}, bf16);
  s.add("model.layers.0.mlp.down_proj.weight", {embd, ff}, bf16);
  s.add("model.norm.weight", {embd}, bf16);
  s.add("lm_head.weight", {vocab, embd}, bf16);  // dropped: tie_word_embeddings
  return s;
}

const test::StTensor& find(const Synth& s, const std::string& name) {
  for (const auto& t : s.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

TEST(ConvertHf, LlamaPermutesQkRowsPerHead) {
  Synth s = small_model("llama", /*head_dim=*/4, /*n_head=*/2, /*n_kv=*/1);
  s.config["tie_word_embeddings"] = false;
  s.write();
  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out);
  const auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_string("general.name"), "model");
  EXPECT_EQ(f->get_uint("llama.rope.dimension_count"), 4u);
  EXPECT_FALSE(f->has("llama.attention.key_length"));  // head_dim * n_head == hidden_size
  EXPECT_FALSE(f->has("tokenizer.ggml.model"));        // no tokenizer.json
  // HF rotate-half rows (per head: 0 1 | 2 3) -> GGUF pairs (0 2 1 3).
  const std::vector<int> q_order = {0, 2, 1, 3, 4, 6, 5, 7}, k_order = {0, 2, 1, 3};
  for (const auto& [hf, gg, order] :
       {std::tuple{"q_proj", "attn_q", q_order}, {"k_proj", "attn_k", k_order}}) {
    const TensorView& t = f->tensor(fmt::format("blk.0.{}.weight", gg));
    const auto& src = find(s, fmt::format("model.layers.0.self_attn.{}.weight", hf));
    ASSERT_EQ(t.rows(), static_cast<int64_t>(order.size()));
    for (size_t r = 0; r < order.size(); ++r)
      EXPECT_EQ(0, std::memcmp(t.row(r), src.bytes.data() + order[r] * t.row_bytes(), t.row_bytes()))
          << gg << r;
  }
  // V and the rest are copied unchanged; lm_head becomes output.weight.
  EXPECT_EQ(0, std::memcmp(f->tensor("blk.0.attn_v.weight").data,
                           find(s, "model.layers.0.self_attn.v_proj.weight").bytes.data(), 4 * 8 * 4));
  ASSERT_NE(f->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f->tensor("output.weight").ne[1], 12);
}

TEST(ConvertHf, MistralIsLlamaWithSlidingWindow) {
  Synth s = small_model("mistral");
  s.config["sliding_window"] = 4096;
  s.write();
  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out);
  const auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_uint("llama.attention.sliding_window"), 4096u);
  const TensorView& q = f->tensor("blk.0.attn_q.weight");  // permuted like llama
  const auto& src = find(s, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(0, std::memcmp(q.row(1), src.bytes.data() + 2 * q.row_bytes(), q.row_bytes()));
}

TEST(ConvertHf, Qwen2Bf16ShardsBiasesNoPermutation) {
  Synth s = small_model("qwen2", 4, 2, 1, /*bf16=*/true, /*bias=*/true);
  s.write(/*shards=*/3);
  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out, {.name = "tiny"});
  const auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
  EXPECT_EQ(f->get_string("general.name"), "tiny");
  EXPECT_EQ(f->get_uint("general.file_type"), 32u);  // mostly BF16
  EXPECT_EQ(f->get_uint("qwen2.attention.key_length"), 4u);
  EXPECT_EQ(f->get_float("qwen2.rope.freq_base"), 1e6);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("qwen2.attention.layer_norm_rms_epsilon")), 1e-6f);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied
  const TensorView& q = f->tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.type, DType::BF16);
  EXPECT_EQ(0, std::memcmp(q.data, find(s, "model.layers.0.self_attn.q_proj.weight").bytes.data(), q.nbytes));
  const TensorView& b = f->tensor("blk.0.attn_k.bias");  // 1-D: converted to F32, not permuted
  EXPECT_EQ(b.type, DType::F32);
  const auto& src = find(s, "model.layers.0.self_attn.k_proj.bias");
  for (int i = 0; i < 4; ++i) {
    uint16_t h;
    std::memcpy(&h, src.bytes.data() + 2 * i, 2);
    EXPECT_EQ(reinterpret_cast<const float*>(b.data)[i], bf16_to_f32(h));
  }
  // Canonical tensor order.
  std::vector<std::string> names;
  for (const auto& t : f->tensors()) names.push_back(t.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"token_embd.weight", "blk.0.attn_norm.weight", "blk.0.attn_q.weight",
                                      "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_q.bias",
                                      "blk.0.attn_k.bias", "blk.0.attn_v.bias", "blk.0.attn_output.weight",
                                      "blk.0.ffn_norm.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
                                      "blk.0.ffn_down.weight", "output_norm.weight"}));
}

TEST(ConvertHf, Qwen3QkNorm) {
  Synth s = small_model("qwen3", 4, 2, 1, false, false, /*qk_norm=*/true);
  s.write();
  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out);
  const auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen3");
  EXPECT_EQ(f->tensor("blk.0.attn_q_norm.weight").ne[0], 4);
  EXPECT_EQ(f->tensor("blk.0.attn_k_norm.weight").ne[0], 4);
  EXPECT_EQ(f->get_uint("qwen3.attention.value_length"), 4u);
}

Synth moe_model(int n_expert, bool bf16) {
  Synth s = small_model("qwen3_moe", 4, 2, 1, bf16, false, /*qk_norm=*/true);
  // Replace the dense MLP by a router + experts.
  std::erase_if(s.tensors, [](const test::StTensor& t) { return t.name.find(".mlp.") != std::string::npos; });
  s.config["num_experts"] = n_expert;
  s.config["num_experts_per_tok"] = 2;
  s.config["moe_intermediate_size"] = 4;
  s.add("model.layers.0.mlp.gate.weight", {n_expert, 8}, bf16);
  for (int e = n_expert - 1; e >= 0; --e)  // any order in the file
    for (const char* k : {"gate", "up", "down"})
      s.add(fmt::format("model.layers.0.mlp.experts.{}.{}_proj.weight", e, k),
            k[0] == 'd' ? std::vector<int64_t>{8, 4} : std::vector<int64_t>{4, 8}, bf16);
  return s;
}

TEST(ConvertHf, Qwen3MoeStacksExperts) {
  Synth s = moe_model(3, /*bf16=*/true);
  s.write(/*shards=*/2);
  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out);
  const auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(f->get_uint("qwen3moe.expert_count"), 3u);
  EXPECT_EQ(f->get_uint("qwen3moe.expert_used_count"), 2u);
  EXPECT_EQ(f->get_uint("qwen3moe.expert_feed_forward_length"), 4u);
  const TensorView& router = f->tensor("blk.0.ffn_gate_inp.weight");
  EXPECT_EQ(router.type, DType::F32);  // router kept in F32
  EXPECT_EQ(router.ne, (std::array<int64_t, 4>{8, 3, 1, 1}));
  for (const char* k : {"gate", "up", "down"}) {
    const TensorView& t = f->tensor(fmt::format("blk.0.ffn_{}_exps.weight", k));
    EXPECT_EQ(t.type, DType::BF16);
    EXPECT_EQ(t.n_dims, 3);
    EXPECT_EQ(t.ne,
              k[0] == 'd' ? (std::array<int64_t, 4>{4, 8, 3, 1}) : (std::array<int64_t, 4>{8, 4, 3, 1}));
    for (int e = 0; e < 3; ++e) {
      const auto& src = find(s, fmt::format("model.layers.0.mlp.experts.{}.{}_proj.weight", e, k));
      EXPECT_EQ(0, std::memcmp(t.data + e * src.bytes.size(), src.bytes.data(), src.bytes.size())) << k << e;
    }
  }
  EXPECT_EQ(f->find_tensor("blk.0.ffn_gate.weight"), nullptr);

  Synth bad = moe_model(3, false);
  std::erase_if(bad.tensors, [](const test::StTensor& t) {
    return t.name == "model.layers.0.mlp.experts.1.up_proj.weight";
  });
  bad.write();
  const std::string e = error_of([&] { convert_hf_to_gguf(bad.dir, bad.dir + "/o.gguf"); });
  EXPECT_NE(e.find("expert 1 of model.layers.0.mlp.experts.*.up_proj.weight is missing"), std::string::npos)
      << e;
}

TEST(ConvertHf, Llama3RopeFreqs) {
  // rope_freqs depends only on head_dim, rope_theta and rope_scaling: use the llama3-ropescaled
  // fixture's values (head_dim 64) and compare with its rope_freqs.weight, bit for bit.
  Synth s = small_model("llama", /*head_dim=*/64, /*n_head=*/1, /*n_kv=*/1);
  s.config["rope_theta"] = 500000.0;
  s.config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 4.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 2048}};
  s.write();
  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out);
  const auto f = gguf::File::open(out);
  // From shared/fixtures/llama3-ropescaled/gguf/llama3-ropescaled-F32.gguf, rope_freqs.weight.
  const uint32_t want[32] = {
      0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000,
      0x3f800000, 0x3f800000, 0x3f800000, 0x3f8eef8c, 0x3fd764dd, 0x40224ab0, 0x40748fe9, 0x40800000,
      0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000,
      0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000, 0x40800000};
  const TensorView& t = f->tensor("rope_freqs.weight");
  ASSERT_EQ(t.n_elements(), 32);
  EXPECT_EQ(0, std::memcmp(t.data, want, sizeof(want)));
  EXPECT_EQ(f->tensors()[1].name, "rope_freqs.weight");
  EXPECT_EQ(f->get_uint("llama.attention.key_length"), 64u);  // head_dim * n_head != hidden_size
}

TEST(ConvertHf, Errors) {
  {
    Synth s = small_model("llama");
    s.add("model.layers.0.mlp.shared_expert.up_proj.weight", {4, 8});
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("tensor 'model.layers.0.mlp.shared_expert.up_proj.weight' has no GGUF equivalent"),
              std::string::npos)
        << e;
  }
  {
    Synth s = small_model("llama");
    s.add("model.layers.0.mlp.experts.0.up_proj.weight", {4, 8});
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("is an MoE expert, but the config has no experts"), std::string::npos) << e;
  }
  {
    Synth s = small_model("llama");
    s.tensors[1].dtype = "F64";  // input_layernorm: 8 F32 values read as 4 F64 values
    s.tensors[1].shape = {4};
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("tensor 'model.layers.0.input_layernorm.weight' has dtype F64"), std::string::npos) << e;
  }
  {
    Synth s = small_model("gemma");
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("unknown architecture 'gemma'"), std::string::npos) << e;
  }
  {
    Synth s = small_model("llama");
    s.config["num_attention_heads"] = 3;  // q_proj has 8 rows, 3 heads x 4 = 12 expected
    s.config["num_key_value_heads"] = 1;
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("'model.layers.0.self_attn.q_proj.weight' has shape [8, 8] (8 rows), expected 12 rows"),
              std::string::npos)
        << e;
  }
  {
    Synth s = small_model("llama");
    s.config["hidden_size"] = "8";
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("field 'hidden_size' has type string, expected integer"), std::string::npos) << e;
  }
  {
    Synth s = small_model("llama");
    s.config["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("rope_scaling type 'dynamic' is not supported"), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(test::temp_dir() + "/o.gguf"));
}

TEST(ConvertHf, LayerNumbersAndJsonTypesAreErrorsNotExceptions) {
  // Layer and expert numbers too large for an integer were std::out_of_range from stoll.
  for (const char* name : {"model.layers.99999999999999999999.input_layernorm.weight",
                           "model.layers.0.mlp.experts.99999999999999999999.up_proj.weight"}) {
    Synth s = small_model("llama");
    s.add(name, {8});
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find(fmt::format("tensor '{}' has layer/expert number 99999999999999999999", name)),
              std::string::npos)
        << e;
  }
  {
    Synth s = small_model("llama");
    s.config["num_hidden_layers"] = 100000;  // layer numbers are bounded, and so is the count
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("num_hidden_layers is 100000, expected a value in [1, 65536]"), std::string::npos) << e;
  }
  {
    Synth s = small_model("llama");
    s.config["rope_scaling"] = {{"rope_type", 3}};  // was a JSON type_error naming nothing
    s.write();
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find("rope_scaling.rope_type has type number, expected string"), std::string::npos) << e;
  }
}

TEST(ConvertHf, TokenizerJsonFieldsOfTheWrongTypeAreNamed) {
  // Were JSON type errors that named neither the file nor the field.
  for (const auto& [tj, want] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model": {"type": 5, "vocab": {}}})",
            "tokenizer.json model: field 'type' has JSON type number"},
           {R"({"model": {"type": "BPE", "byte_fallback": "yes", "vocab": {}}})",
            "tokenizer.json model: field 'byte_fallback' has JSON type string"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": {}})",
            "tokenizer.json: field 'added_tokens' has JSON type object"}}) {
    Synth s = small_model("llama");
    s.write();
    std::ofstream(s.dir + "/tokenizer.json") << tj;
    const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, s.dir + "/o.gguf"); });
    EXPECT_NE(e.find(want), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace ferrum::convert_hf_test

namespace ferrum::convert_hf_test {
namespace {

TEST(ConvertHf, BertLayoutVocabAndPooling) {
  Synth s;
  const int64_t embd = 8, ff = 16, vocab = 8;
  s.config = {{"architectures", {"BertModel"}},
              {"model_type", "bert"},
              {"hidden_size", embd},
              {"intermediate_size", ff},
              {"num_hidden_layers", 1},
              {"num_attention_heads", 2},
              {"vocab_size", vocab},
              {"max_position_embeddings", 16},
              {"type_vocab_size", 2},
              {"layer_norm_eps", 1e-12}};
  for (const char* n : {"embeddings.LayerNorm.bias", "embeddings.LayerNorm.weight"}) s.add(n, {embd}, true);
  s.add("embeddings.position_embeddings.weight", {16, embd}, true);
  s.add("embeddings.token_type_embeddings.weight", {2, embd}, true);
  s.add("embeddings.word_embeddings.weight", {vocab, embd}, true);
  for (const char* m :
       {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
    s.add(fmt::format("encoder.layer.0.{}.weight", m), {embd, embd}, true);
    s.add(fmt::format("encoder.layer.0.{}.bias", m), {embd}, true);
  }
  for (const char* m : {"attention.output.LayerNorm", "output.LayerNorm"}) {
    s.add(fmt::format("encoder.layer.0.{}.weight", m), {embd}, true);
    s.add(fmt::format("encoder.layer.0.{}.bias", m), {embd}, true);
  }
  s.add("encoder.layer.0.intermediate.dense.weight", {ff, embd}, true);
  s.add("encoder.layer.0.intermediate.dense.bias", {ff}, true);
  s.add("encoder.layer.0.output.dense.weight", {embd, ff}, true);
  s.add("encoder.layer.0.output.dense.bias", {embd}, true);
  s.add("pooler.dense.weight", {embd, embd}, true);                                          // dropped
  s.tensors.push_back({"embeddings.position_ids", "I64", {16}, std::string(16 * 8, '\0')});  // skipped
  s.write();
  std::ofstream(s.dir + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##ing\nplay\n";
  std::ofstream(s.dir + "/modules.json")
      << R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
             {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])";
  fs::create_directories(s.dir + "/1_Pooling");
  std::ofstream(s.dir + "/1_Pooling/config.json") << R"({"pooling_mode_cls_token": true})";

  const std::string out = s.dir + "/out.gguf";
  convert_hf_to_gguf(s.dir, out);
  const auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), "bert");
  EXPECT_EQ(f->get_uint("general.file_type"), 32u);
  EXPECT_EQ(f->get_uint("bert.attention.head_count"), 2u);
  EXPECT_FALSE(f->get_bool("bert.attention.causal"));
  EXPECT_EQ(f->get_uint("bert.pooling_type"), 2u);  // CLS
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("bert.attention.layer_norm_epsilon")), 1e-12f);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.token_type_count"), 2u);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "bert");
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\xe2\x96\x81the", "ing",
                                      "\xe2\x96\x81play"}));
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type"), (std::vector<int64_t>{3, 3, 3, 3, 3, 1, 1, 1}));
  EXPECT_EQ(f->get_uint("tokenizer.ggml.bos_token_id"), 2u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.cls_token_id"), 2u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.seperator_token_id"), 3u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.unknown_token_id"), 1u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.padding_token_id"), 0u);
  EXPECT_EQ(f->get_uint("tokenizer.ggml.mask_token_id"), 4u);

  std::vector<std::string> names;
  for (const auto& t : f->tensors()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_embd.weight",           "token_types.weight",
                                             "position_embd.weight",        "token_embd_norm.weight",
                                             "token_embd_norm.bias",        "blk.0.attn_q.weight",
                                             "blk.0.attn_q.bias",           "blk.0.attn_k.weight",
                                             "blk.0.attn_k.bias",           "blk.0.attn_v.weight",
                                             "blk.0.attn_v.bias",           "blk.0.attn_output.weight",
                                             "blk.0.attn_output.bias",      "blk.0.attn_output_norm.weight",
                                             "blk.0.attn_output_norm.bias", "blk.0.ffn_up.weight",
                                             "blk.0.ffn_up.bias",           "blk.0.ffn_down.weight",
                                             "blk.0.ffn_down.bias",         "blk.0.layer_output_norm.weight",
                                             "blk.0.layer_output_norm.bias"}));
  EXPECT_EQ(f->tensor("token_embd.weight").type, DType::BF16);
  EXPECT_EQ(f->tensor("position_embd.weight").type, DType::F32);  // llama.cpp keeps it F32
  EXPECT_EQ(f->tensor("token_types.weight").type, DType::F32);
  EXPECT_EQ(f->tensor("blk.0.ffn_up.weight").ne, (std::array<int64_t, 4>{8, 16, 1, 1}));
  const auto& src = find(s, "encoder.layer.0.attention.self.key.weight");
  EXPECT_EQ(0, std::memcmp(f->tensor("blk.0.attn_k.weight").data, src.bytes.data(), src.bytes.size()));

  // Vocabulary size must match the embedding.
  std::ofstream(s.dir + "/vocab.txt") << "[PAD]\n[UNK]\n";
  const std::string e = error_of([&] { convert_hf_to_gguf(s.dir, out); });
  EXPECT_NE(e.find("the vocabulary has 2 tokens, but word_embeddings has 8 rows"), std::string::npos) << e;
}

}  // namespace
}  // namespace ferrum::convert_hf_test
