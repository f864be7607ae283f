// `ferrum tokenize` / `detokenize` / `template` end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace ferrum::test {
namespace {

std::string bundled() { return std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf"; }
std::string qwen3() { return unxz("models/qwen3/gguf/qwen3-Q8_0.gguf"); }

TEST(CliTokenizer, TokenizeMatchesReferenceIds) {
  auto r = run_ferrum("tokenize '" + bundled() + "' 'Once upon a time, there was' --ids-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378 432 383 286\n");
  auto pieces = run_ferrum("tokenize '" + bundled() + "' 'Once upon'");
  EXPECT_NE(pieces.out.find("403 \" Once\""), std::string::npos) << pieces.out;
}

TEST(CliTokenizer, SpecialTokensParsedUnlessNoSpecial) {
  auto with = run_ferrum("tokenize '" + qwen3() + "' '<|im_start|>user' --ids-only");
  auto without = run_ferrum("tokenize '" + qwen3() + "' '<|im_start|>user' --ids-only --no-special");
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_EQ(with.out.rfind("638 ", 0), 0u) << with.out;
  EXPECT_EQ(without.out.find("638"), std::string::npos) << without.out;
}

TEST(CliTokenizer, DetokenizeRoundTripsAndRejectsBadIds) {
  auto r = run_ferrum("detokenize '" + bundled() + "' '1,403,407,261,378' --skip-special");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Once upon a time\n");
  auto bad = run_ferrum("detokenize '" + bundled() + "' '1,99999'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("99999"), std::string::npos) << bad.err;
}

TEST(CliTokenizer, TemplateRendersChatML) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/m.json") << R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])";
  auto r = run_ferrum("template '" + qwen3() + "' --messages " + dir + "/m.json --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  std::ofstream(dir + "/bad.jinja") << "{% for m in messages %}{{ m.content }";
  auto bad = run_ferrum("template '" + qwen3() + "' --messages " + dir + "/m.json --template " + dir + "/bad.jinja");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.jinja:1:"), std::string::npos) << bad.err;  // file:line:column
  auto none = run_ferrum("template '" + bundled() + "' --messages " + dir + "/m.json");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no chat template"), std::string::npos) << none.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferrum::test
