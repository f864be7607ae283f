// `ferrum tokenize` / `detokenize` / `template` end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_util.h"

namespace ferrum::test {
namespace {

std::string qwen3() { return unxz("models/qwen3/gguf/qwen3-Q8_0.gguf"); }

TEST(CliTokenizer, TokenizeMatchesReferenceIds) {
  auto r = run_ferrum("tokenize '" + bundled_model() + "' 'Once upon a time, there was' --ids-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378 432 383 286\n");
  auto pieces = run_ferrum("tokenize '" + bundled_model() + "' 'Once upon'");
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
  auto r = run_ferrum("detokenize '" + bundled_model() + "' '1,403,407,261,378' --skip-special");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Once upon a time\n");
  auto bad = run_ferrum("detokenize '" + bundled_model() + "' '1,99999'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("99999"), std::string::npos) << bad.err;
}

// `tokenize --ids-only` prints what detokenize and eval --tokens read, quoted as one argument or
// unquoted as several, and commas and/or spaces are accepted as separators.
TEST(CliTokenizer, IdsOnlyOutputRoundTripsThroughDetokenizeAndEval) {
  const std::string m = "'" + bundled_model() + "'";
  auto tok = run_ferrum("tokenize " + m + " 'Once upon a time' --ids-only");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  ASSERT_EQ(tok.out.back(), '\n');
  const std::string ids = tok.out.substr(0, tok.out.size() - 1);
  EXPECT_EQ(ids, "1 403 407 261 378");
  for (const std::string& arg :
       {"'" + ids + "'", ids, std::string("'1,403 407, 261,378'"), std::string("1, 403, 407 261,378"),
        std::string("'[1, 403, 407, 261, 378]'")}) {
    auto r = run_ferrum("detokenize " + m + " " + arg + " --skip-special");
    EXPECT_EQ(r.exit_code, 0) << arg << ": " << r.err;
    EXPECT_EQ(r.out, "Once upon a time\n") << arg;
  }

  const std::string dir = temp_dir();
  auto read_json = [](const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  };
  auto from_prompt = run_ferrum("eval " + m + " --prompt 'Once upon a time' --out " + dir + "/p.json");
  ASSERT_EQ(from_prompt.exit_code, 0) << from_prompt.err;
  const nlohmann::json want = read_json(dir + "/p.json");
  EXPECT_EQ(want["tokens"], nlohmann::json({1, 403, 407, 261, 378}));
  for (const std::string& arg : {"'" + ids + "'", ids, std::string("'1, 403,407 261 378'")}) {
    auto r = run_ferrum("eval " + m + " --tokens " + arg + " --out " + dir + "/t.json");
    ASSERT_EQ(r.exit_code, 0) << arg << ": " << r.err;
    const nlohmann::json got = read_json(dir + "/t.json");
    EXPECT_EQ(got["tokens"], want["tokens"]) << arg;
    EXPECT_EQ(got["top_ids"], want["top_ids"]) << arg;
  }
  std::filesystem::remove_all(dir);
}

// A bad item is one `ferrum: error:` line naming the argument and the item, exit 1; a number too
// long to be an id is shortened, not echoed whole.
TEST(CliTokenizer, BadTokenIdsAreOneErrorLine) {
  const std::string m = "'" + bundled_model() + "'", dir = temp_dir(), out = " --out " + dir + "/e.json";
  const struct {
    std::string args, needle;
  } cases[] = {
      {"detokenize " + m + " x1", "ids: 'x1' is not a token id"},
      {"detokenize " + m + " 1 403 x1", "ids: 'x1' is not a token id"},
      {"detokenize " + m + " '1,403;407'", "ids: '403;407' is not a token id"},
      {"detokenize " + m + " 1.5", "ids: '1.5' is not a token id"},
      {"detokenize " + m + " '1,99999'", "ids: 99999 is not in the vocabulary (token ids are 0 to 511)"},
      {"detokenize " + m + " ' , '", "ids: no token ids given"},
      {"detokenize " + m + " 123456789012345678901234567890",
       "ids: 1234567890123456... (30 characters) is too large"},
      {"eval " + m + " --tokens 1,x1" + out, "--tokens: 'x1' is not a token id"},
      {"eval " + m + " --tokens '1 403' +5" + out, "--tokens: '+5' is not a token id"},
      {"eval " + m + " --tokens 1,512" + out,
       "--tokens: 512 is not in the vocabulary (token ids are 0 to 511)"},
      {"eval " + m + " --tokens 99999999999" + out, "--tokens: 99999999999 is too large for a token id"},
      {"eval " + m + " --tokens ''" + out, "--tokens: no token ids given"},
      {"eval --tokens 1 403 " + m + out, "(a file: give the model before the ids)"},
  };
  for (const auto& c : cases) {
    auto r = run_ferrum(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("ferrum: error: ", 0), 0u) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex("[0-9]{21}"))) << c.args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/e.json"));
  std::filesystem::remove_all(dir);
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
  // A model without a template shows the server's fallback (template_cli_test.cpp).
  auto none = run_ferrum("template '" + bundled_model() + "' --messages " + dir + "/m.json");
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.err.find("no chat template"), std::string::npos) << none.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferrum::test
