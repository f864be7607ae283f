// `ferrum quantize` gives every tensor the type llama-quantize gives it: the recipe applied to each
// fixture model's F32 file must reproduce the tensor types of every file llama-quantize made from it
// (tests/data/models: the shared fixtures and tests/data/quant's presets).
#include "models/quant_recipe.h"

#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "model_test_util.h"
#include "test_util.h"

namespace ferrum {
namespace {

TEST(QuantRecipe, EveryTensorTypedAsLlamaQuantizeDoes) {
  const struct {
    const char* model;
    std::vector<const char*> presets;
    bool imatrix = false;  // made with llama-quantize --imatrix
  } cases[] = {
      {"llama",
       {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q4_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_NL",
        "IQ4_XS"}},
      {"llama3-ropescaled", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},
      {"qwen2", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},
      {"qwen3", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},
      {"qwen3moe", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "IQ4_XS"}},
      {"bert", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},  // 128 columns: the fallbacks
      {"llama", {"IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_M", "IQ1_S", "IQ1_M"}, true},
  };
  int checked = 0;
  for (const auto& c : cases) {
    const std::string m = c.model;
    auto src = gguf::File::open(test::model_file(m, "gguf/" + m + "-F32.gguf"));
    for (const char* preset : c.presets) {
      auto made = gguf::File::open(test::model_file(m, "gguf/" + m + "-" + preset + ".gguf"));
      QuantRecipe recipe(find_quant_preset(preset), recipe_model(*src), c.imatrix);
      ASSERT_EQ(made->tensors().size(), src->tensors().size()) << m << " " << preset;
      for (const TensorView& t : src->tensors()) {
        EXPECT_EQ(dtype_name(recipe.type_of(t)), std::string(dtype_name(made->tensor(t.name).type)))
            << m << " " << preset << " " << t.name;
        ++checked;
      }
    }
  }
  std::printf("  %d tensors checked\n", checked);
}

// llama-quantize's type flags as `ferrum quantize` takes them.
QuantOverrides overrides_of(const nlohmann::json& flags) {
  QuantOverrides o;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string f = flags[i];
    if (f == "--pure")
      o.pure = true;
    else if (f == "--leave-output-tensor")
      o.leave_output = true;
    else if (f == "--output-tensor-type")
      o.output_type = quant_type_from_name(flags[++i], f);
    else if (f == "--token-embedding-type")
      o.embedding_type = quant_type_from_name(flags[++i], f);
    else if (f == "--tensor-type")
      o.tensor_types.push_back(parse_tensor_type(flags[++i]));
    else
      ADD_FAILURE() << "flag " << f;
  }
  return o;
}

// The presets whose files are not fixtures: the types llama-quantize gave every tensor
// (tests/data/quant/recipe_types.json), with and without an importance matrix, dense and MoE, and
// with its type flags (--pure, --leave-output-tensor, --output-tensor-type, --token-embedding-type,
// --tensor-type).
TEST(QuantRecipe, TypesOfMorePresetsAsLlamaQuantizeGives) {
  const nlohmann::json cases = test::load_json(test::data_path("quant/recipe_types.json"))["cases"];
  int checked = 0;
  for (const auto& c : cases) {
    const std::string m = c["model"], preset = c["preset"];
    auto src = gguf::File::open(test::unxz("models/" + m + "/gguf/" + m + "-F32.gguf"));
    QuantRecipe recipe(find_quant_preset(preset), recipe_model(*src), c["imatrix"].get<bool>(),
                       overrides_of(c["flags"]));
    for (const TensorView& t : src->tensors()) {
      EXPECT_EQ(dtype_name(recipe.type_of(t)), c["types"][t.name].get<std::string>())
          << m << " " << preset << (c["imatrix"].get<bool>() ? " (imatrix) " : " ") << c["flags"].dump()
          << " " << t.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 350);
  std::printf("  %d tensors checked\n", checked);
}

TEST(QuantRecipe, TypeFlagValuesAreChecked) {
  EXPECT_EQ(parse_tensor_type("ATTN_V=q8_0"), (std::pair<std::string, DType>("attn_v", DType::Q8_0)));
  std::string msg = test::error_of([] { parse_tensor_type("attn_v"); });
  EXPECT_NE(msg.find("--tensor-type: 'attn_v' is not PATTERN=TYPE"), std::string::npos) << msg;
  msg = test::error_of([] { parse_tensor_type("attn_v=q9_0"); });
  EXPECT_NE(msg.find("--tensor-type attn_v=q9_0: 'q9_0' is not a type ferrum writes (F32, F16"),
            std::string::npos)
      << msg;
  msg = test::error_of([] { quant_type_from_name("Q8_K", "--output-tensor-type"); });
  EXPECT_NE(msg.find("--output-tensor-type: 'Q8_K' is not a type ferrum writes"), std::string::npos) << msg;
  QuantOverrides o;
  o.tensor_types.push_back({"attn_(v", DType::Q8_0});
  msg = test::error_of([&] { QuantRecipe(find_quant_preset("Q4_0"), RecipeModel{}, false, o); });
  EXPECT_NE(msg.find("--tensor-type: 'attn_(v' is not a regular expression"), std::string::npos) << msg;
}

TEST(QuantRecipe, PresetNamesAndAliases) {
  EXPECT_STREQ(find_quant_preset("q4_k").name, "Q4_K_M");  // llama-quantize's alias
  EXPECT_STREQ(find_quant_preset("Q3_K").name, "Q3_K_M");
  EXPECT_EQ(find_quant_preset("IQ4_XS").file_type, 30u);
  EXPECT_EQ(find_quant_preset("iq2_m").base, DType::IQ2_S);  // llama-quantize's IQ2_M preset makes IQ2_S
  EXPECT_EQ(find_quant_preset("IQ2_S").base, DType::IQ2_XS);
  EXPECT_EQ(find_quant_preset("IQ3_XS").file_type, 22u);
  std::string msg = test::error_of([] { find_quant_preset("TQ1_0"); });
  EXPECT_NE(msg.find("quantization preset 'TQ1_0' is not supported by ferrum"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ferrum writes F32, F16, BF16, Q4_0"), std::string::npos) << msg;
  msg = test::error_of([] { find_quant_preset("Q7_Z"); });
  EXPECT_NE(msg.find("unknown quantization preset 'Q7_Z' (ferrum writes F32, F16, BF16, Q4_0"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace ferrum
