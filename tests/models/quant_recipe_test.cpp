// `ferrum quantize` gives every tensor the type llama-quantize gives it: the recipe applied to each
// fixture model's F32 file must reproduce the tensor types of every file llama-quantize made from it
// (tests/data/models: the shared fixtures and tests/data/quant's presets).
#include "models/quant_recipe.h"

#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "model_test_util.h"

namespace ferrum {
namespace {

TEST(QuantRecipe, EveryTensorTypedAsLlamaQuantizeDoes) {
  const struct {
    const char* model;
    std::vector<const char*> presets;
  } cases[] = {
      {"llama",
       {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q4_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_NL",
        "IQ4_XS"}},
      {"llama3-ropescaled", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},
      {"qwen2", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},
      {"qwen3", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},
      {"qwen3moe", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "IQ4_XS"}},
      {"bert", {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}},  // 128 columns: the fallbacks
  };
  int checked = 0;
  for (const auto& c : cases) {
    const std::string m = c.model;
    auto src = gguf::File::open(test::model_file(m, "gguf/" + m + "-F32.gguf"));
    for (const char* preset : c.presets) {
      auto made = gguf::File::open(test::model_file(m, "gguf/" + m + "-" + preset + ".gguf"));
      QuantRecipe recipe(find_quant_preset(preset), recipe_model(*src));
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

TEST(QuantRecipe, PresetNamesAndAliases) {
  EXPECT_STREQ(find_quant_preset("q4_k").name, "Q4_K_M");  // llama-quantize's alias
  EXPECT_STREQ(find_quant_preset("Q3_K").name, "Q3_K_M");
  EXPECT_EQ(find_quant_preset("IQ4_XS").file_type, 30u);
  std::string msg = test::error_of([] { find_quant_preset("IQ2_XXS"); });
  EXPECT_NE(msg.find("quantization preset 'IQ2_XXS' is not written by ferrum yet"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ferrum writes F32, F16, BF16, Q4_0"), std::string::npos) << msg;
  msg = test::error_of([] { find_quant_preset("Q7_Z"); });
  EXPECT_NE(msg.find("unknown quantization preset 'Q7_Z' (ferrum writes F32, F16, BF16, Q4_0"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace ferrum
