// config.json parsing: architecture detection, typed accessors, generation_config.json.
#include "formats/hf_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "ferrum/error.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::hf {
namespace {

using test::error_of;

TEST(HfConfig, FixtureArchitectures) {
  const std::pair<const char*, const char*> cases[] = {
      {"llama", "llama"}, {"llama3-ropescaled", "llama"}, {"qwen2", "qwen2"},
      {"qwen3", "qwen3"}, {"qwen3moe", "qwen3_moe"},      {"bert", "bert"}};
  for (const auto& [dir, arch] : cases) {
    const Config c = Config::load(test::data_path(std::string("formats/hf/") + dir));
    EXPECT_EQ(c.architecture(), arch) << dir;
  }
}

TEST(HfConfig, TypedAccessors) {
  const Config c = Config::load(test::data_path("formats/hf/llama3-ropescaled/config.json"));
  EXPECT_EQ(c.get_int("num_attention_heads"), 4);
  EXPECT_EQ(c.get_int("num_key_value_heads"), 2);
  EXPECT_EQ(c.get_float("rope_theta"), 500000.0);
  EXPECT_EQ(c.get_float("rms_norm_eps"), 1e-5);
  EXPECT_EQ(c.get_float("hidden_size"), 256.0);  // integers are numbers too
  EXPECT_TRUE(c.get_bool("tie_word_embeddings"));
  EXPECT_EQ(c.get_string("hidden_act"), "silu");
  EXPECT_FALSE(c.find_int("sliding_window").has_value());
  const nlohmann::json* rs = c.find_object("rope_scaling");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ((*rs)["rope_type"], "llama3");
  EXPECT_EQ(c.eos_token_ids(), (std::vector<int64_t>{2}));
  EXPECT_EQ(c.bos_token_id(), 1);

  std::string e = error_of([&] { c.get_int("hidden_act"); });
  EXPECT_NE(e.find("config.json: field 'hidden_act' has type string, expected integer"), std::string::npos)
      << e;
  e = error_of([&] { c.get_int("rms_norm_eps"); });
  EXPECT_NE(e.find("field 'rms_norm_eps' is 1e-05, expected an integer"), std::string::npos) << e;
  e = error_of([&] { c.get_bool("num_attention_heads"); });
  EXPECT_NE(e.find("has type integer, expected boolean"), std::string::npos) << e;
  e = error_of([&] { c.find_object("hidden_size"); });
  EXPECT_NE(e.find("expected object"), std::string::npos) << e;
  e = error_of([&] { c.get_int("nope"); });
  EXPECT_NE(e.find("field 'nope' is missing"), std::string::npos) << e;
  const Config q = Config::load(test::data_path("formats/hf/qwen3"));
  e = error_of([&] { q.get_int("sliding_window"); });
  EXPECT_NE(e.find("field 'sliding_window' is null"), std::string::npos) << e;
  EXPECT_EQ(q.find_object("rope_scaling"), nullptr);
  EXPECT_EQ(q.eos_token_ids(), (std::vector<int64_t>{639}));
}

TEST(HfConfig, ArchitectureFallbackAndEosList) {
  Config c = Config::from_json({{"architectures", {"MistralForCausalLM"}}, {"eos_token_id", {2, 7}}});
  EXPECT_EQ(c.architecture(), "mistral");
  EXPECT_EQ(c.eos_token_ids(), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(Config::from_json({{"model_type", "Qwen2"}}).architecture(), "qwen2");
  EXPECT_EQ(Config::from_json({{"architectures", {"Qwen3MoeForCausalLM"}}}).architecture(), "qwen3_moe");
  EXPECT_EQ(Config::from_json({{"model_type", "gemma"}}).architecture(), "gemma");
  EXPECT_NE(error_of([] {
              Config::from_json({{"hidden_size", 4}});
            }).find("cannot tell the architecture"),
            std::string::npos);
  EXPECT_NE(error_of([] { Config::from_json(nlohmann::json::array()); }).find("expected a JSON object"),
            std::string::npos);

  // generation_config.json with a list overrides config.json.
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/config.json") << R"({"model_type": "llama", "eos_token_id": 2})";
  std::ofstream(dir + "/generation_config.json") << R"({"eos_token_id": [128001, 128009]})";
  EXPECT_EQ(Config::load(dir).eos_token_ids(), (std::vector<int64_t>{128001, 128009}));
  std::ofstream(dir + "/generation_config.json") << R"({"eos_token_id": "x"})";
  EXPECT_NE(error_of([&] {
              Config::load(dir).eos_token_ids();
            }).find("generation_config.json: field 'eos_token_id'"),
            std::string::npos);
}

TEST(HfConfig, BadJsonReportsLine) {
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/config.json") << "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 12,,\n}\n";
  const std::string e = error_of([&] { Config::load(dir); });
  EXPECT_NE(e.find("config.json: invalid JSON at line 3, column 21"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { Config::load(dir + "/nope"); }).find("no config.json"), std::string::npos);
}

}  // namespace
}  // namespace ferrum::hf
