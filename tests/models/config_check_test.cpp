// Model configs with sizes that are zero, overflowing or inconsistent with each other (from a
// GGUF, a config.json or built directly) must fail with a ferrum::Error naming the file and the
// field, before any division by them or any allocation sized by them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "ferrum/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "model_test_util.h"
#include "models/registry.h"

namespace ferrum::test {
namespace {

namespace fs = std::filesystem;

const std::string kSource = model_file("llama", "gguf/llama-Q4_0.gguf");

// The fixture's metadata and tensors, with `edit` applied to the metadata, written to a new file.
std::string edited_gguf(const std::string& name, const std::function<void(gguf::Writer&)>& edit) {
  auto src = gguf::File::open(kSource);
  gguf::Writer w;
  w.copy_metadata_from(*src);
  for (const TensorView& t : src->tensors()) w.add_tensor(t);
  edit(w);
  const std::string path = temp_dir() + "/" + name + ".gguf";
  w.write(path);
  return path;
}

// The error of loading an edited GGUF as far as building the model.
std::string load_error(const std::string& name, const std::function<void(gguf::Writer&)>& edit) {
  const std::string path = edited_gguf(name, edit);
  return error_of([&] {
    ModelFiles files = open_model_files(path);
    ModelOptions opts;
    opts.n_threads = 1;
    create_model(std::move(files.config), std::move(files.weights), opts);
  });
}

TEST(ConfigCheck, FixtureLoads) {
  EXPECT_EQ(load_error("ok", [](gguf::Writer&) {}), "(no error)");
}

TEST(ConfigCheck, GgufZeroHeadDimensionIsAnError) {
  // Was SIGFPE: the KV cache divided by the per-token size of a zero-width head.
  const std::string msg =
      load_error("kl0", [](gguf::Writer& w) { w.set_u32("llama.attention.key_length", 0); });
  EXPECT_NE(msg.find("llama.attention.key_length is 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".gguf"), std::string::npos) << msg;
}

TEST(ConfigCheck, GgufEmbeddingSmallerThanHeadCountIsAnError) {
  // n_embd / n_head was 0 when key_length is absent.
  const std::string msg = load_error("emb", [](gguf::Writer& w) {
    w.remove("llama.attention.key_length");
    w.set_u32("llama.embedding_length", 3);
  });
  EXPECT_NE(msg.find("llama.embedding_length 3 is not a multiple of llama.attention.head_count 4"),
            std::string::npos)
      << msg;
}

TEST(ConfigCheck, GgufOverflowingSizesAreErrors) {
  // 2^32 + 2 used to be truncated to 2 heads.
  std::string msg = load_error(
      "kv64", [](gguf::Writer& w) { w.set_u64("llama.attention.head_count_kv", (uint64_t{1} << 32) + 2); });
  EXPECT_NE(msg.find("llama.attention.head_count_kv' is 4294967298, too large"), std::string::npos) << msg;
  // n_head * head_dim overflows an int.
  msg = load_error("wide", [](gguf::Writer& w) {
    w.set_u32("llama.attention.head_count", 65536);
    w.set_u32("llama.attention.head_count_kv", 65536);
    w.set_u32("llama.attention.key_length", 1024);
  });
  EXPECT_NE(msg.find("too wide"), std::string::npos) << msg;
  // Head sizes past the attention kernels' limit.
  msg = load_error("head", [](gguf::Writer& w) { w.set_u32("llama.attention.key_length", 65536); });
  EXPECT_NE(msg.find("llama.attention.key_length is 65536, expected a value in [1, 1024]"), std::string::npos) << msg;
  msg = load_error("layers", [](gguf::Writer& w) { w.set_u32("llama.block_count", 1u << 30); });
  EXPECT_NE(msg.find("llama.block_count is 1073741824"), std::string::npos) << msg;
}

TEST(ConfigCheck, GgufHeadCountsMustDivide) {
  std::string msg = load_error("kv0", [](gguf::Writer& w) { w.set_u32("llama.attention.head_count_kv", 0); });
  EXPECT_NE(msg.find("llama.attention.head_count_kv is 0"), std::string::npos) << msg;
  msg = load_error("kv3", [](gguf::Writer& w) { w.set_u32("llama.attention.head_count_kv", 3); });
  EXPECT_NE(msg.find("llama.attention.head_count 4 is not a multiple of llama.attention.head_count_kv 3"),
            std::string::npos)
      << msg;
}

TEST(ConfigCheck, GgufRopeSettingsAreChecked) {
  std::string msg = load_error("rot", [](gguf::Writer& w) { w.set_u32("llama.rope.dimension_count", 7); });
  EXPECT_NE(msg.find("llama.rope.dimension_count is 7"), std::string::npos) << msg;
  // Found by fuzz_gguf: no rotated dimensions indexed an empty RoPE table (null reference).
  msg = load_error("rot0", [](gguf::Writer& w) { w.set_u32("llama.rope.dimension_count", 0); });
  EXPECT_NE(msg.find("llama.rope.dimension_count is 0, expected an even number of dimensions from 2"),
            std::string::npos)
      << msg;
  msg = load_error("theta", [](gguf::Writer& w) {
    w.set_f32("llama.rope.freq_base", std::numeric_limits<float>::quiet_NaN());
  });
  EXPECT_NE(msg.find("llama.rope.freq_base is nan"), std::string::npos) << msg;
  msg = load_error("lin", [](gguf::Writer& w) { w.set_f32("llama.rope.scale_linear", 0.0f); });
  EXPECT_NE(msg.find("RoPE scaling factor"), std::string::npos) << msg;
  msg =
      load_error("eps", [](gguf::Writer& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", -1.0f); });
  EXPECT_NE(msg.find("llama.attention.layer_norm_rms_epsilon is -1"), std::string::npos) << msg;
}

TEST(ConfigCheck, GgufVocabularyMustMatchTheEmbedding) {
  const std::string msg =
      load_error("vocab", [](gguf::Writer& w) { w.set_u32("llama.vocab_size", 100000000); });
  EXPECT_NE(msg.find("token_embd.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected [256, 100000000]"), std::string::npos) << msg;
}

TEST(ConfigCheck, GgufLayerCountBeyondTheTensorsFailsBeforeAllocating) {
  // 60000 layers of KV cache would be sized before the first missing tensor was noticed.
  const std::string msg = load_error("deep", [](gguf::Writer& w) { w.set_u32("llama.block_count", 60000); });
  EXPECT_NE(msg.find("'blk.59999.attn_norm.weight' is missing"), std::string::npos) << msg;
}

TEST(ConfigCheck, GgufRopeFreqsTensorIsChecked) {
  // Llama-3 frequency factors divide the RoPE angles: a zero one gave infinite angles.
  auto src = gguf::File::open(model_file("llama3-ropescaled", "gguf/llama3-ropescaled-Q4_0.gguf"));
  gguf::Writer w;
  w.copy_metadata_from(*src);
  std::vector<float> zeros;
  for (const TensorView& t : src->tensors()) {
    if (t.name != "rope_freqs.weight") {
      w.add_tensor(t);
      continue;
    }
    zeros.assign(static_cast<size_t>(t.n_elements()), 0.0f);
    w.add_tensor(t.name, DType::F32, {t.ne[0]}, zeros.data(), zeros.size() * sizeof(float));
  }
  ASSERT_FALSE(zeros.empty());
  const std::string path = temp_dir() + "/rope0.gguf";
  w.write(path);
  const std::string msg = error_of([&] {
    ModelFiles files = open_model_files(path);
    create_model(std::move(files.config), std::move(files.weights), {});
  });
  EXPECT_NE(msg.find("tensor 'rope_freqs.weight' holds 0, expected positive RoPE frequency factors"),
            std::string::npos)
      << msg;
}

// A directory with just this config.json: the config is checked before any weight is read.
std::string hf_config_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json cfg = load_json(data_path("models/llama/hf/config.json"));
  edit(cfg);
  const fs::path dir = fs::path(temp_dir()) / "hfcfg";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << cfg.dump(2);
  return error_of([&] { load_hf_dir(dir.string()); });
}

TEST(ConfigCheck, HfConfigSizesAreChecked) {
  std::string msg = hf_config_error([](nlohmann::json& c) { c["head_dim"] = 0; });
  EXPECT_NE(msg.find("config.json: head_dim is 0"), std::string::npos) << msg;
  msg = hf_config_error([](nlohmann::json& c) {
    c.erase("head_dim");
    c["hidden_size"] = 2;
  });
  EXPECT_NE(msg.find("hidden_size 2 is not a multiple of num_attention_heads 4"), std::string::npos) << msg;
  msg = hf_config_error([](nlohmann::json& c) { c["num_key_value_heads"] = 4294967298LL; });
  EXPECT_NE(msg.find("field 'num_key_value_heads' is 4294967298, out of range"), std::string::npos) << msg;
  msg = hf_config_error([](nlohmann::json& c) { c["num_key_value_heads"] = 3; });
  EXPECT_NE(msg.find("num_attention_heads 4 is not a multiple of num_key_value_heads 3"), std::string::npos)
      << msg;
  msg = hf_config_error([](nlohmann::json& c) { c["vocab_size"] = 0; });
  EXPECT_NE(msg.find("vocab_size is 0"), std::string::npos) << msg;
  msg = hf_config_error([](nlohmann::json& c) { c["rope_theta"] = -5; });
  EXPECT_NE(msg.find("rope_theta is -5"), std::string::npos) << msg;
}

TEST(ConfigCheck, HfRopeScalingIsChecked) {
  std::string msg = hf_config_error([](nlohmann::json& c) {
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", "two"}};
  });
  EXPECT_NE(msg.find("rope_scaling.factor has type string"), std::string::npos) << msg;
  msg = hf_config_error([](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", 3}}; });
  EXPECT_NE(msg.find("rope_scaling.rope_type has type number"), std::string::npos) << msg;
  // A zero factor makes the low frequencies' divisors zero.
  msg = hf_config_error([](nlohmann::json& c) {
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 0.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
    c["rope_theta"] = 500000.0;
  });
  EXPECT_NE(msg.find("RoPE frequency factor"), std::string::npos) << msg;
}

TEST(ConfigCheck, ConfigBuiltDirectlyIsCheckedByCreateModel) {
  ModelFiles files = open_model_files(kSource);
  files.config.head_dim = 0;
  const std::string msg =
      error_of([&] { create_model(std::move(files.config), std::move(files.weights), {}); });
  EXPECT_NE(msg.find("llama.attention.key_length is 0"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ferrum::test
