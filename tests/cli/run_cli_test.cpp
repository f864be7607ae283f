// `ferrum run` as llama-cli and Ollama users drive it: prompts from -p, -f, a pipe or the text
// after the model give the same output; seeds (random by default, reproducible when given); every
// ending other than the model's own says why on stderr; constrained output cut short is an error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test {
namespace {

// `ferrum ARGS < file holding stdin_text`.
RunResult run_with_stdin(const std::string& args, const std::string& stdin_text) {
  const std::string dir = temp_dir();
  const std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
  std::ofstream(in, std::ios::binary) << stdin_text;
  const std::string cmd =
      std::string("'") + FERRUM_BINARY + "' " + args + " < '" + in + "' > '" + out + "' 2> '" + err + "'";
  const int rc = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  std::ifstream o(out, std::ios::binary), e(err, std::ios::binary);
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove_all(dir);
  return r;
}

TEST(RunCli, PromptFromFileStdinOrAfterTheModelEqualsDashP) {
  const std::string flags = " -n 24 --seed 5";
  const RunResult p = run_ferrum("run -p 'The dog ran'" + flags);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  ASSERT_EQ(p.out.rfind("The dog ran", 0), 0u) << p.out;
  const std::string dir = temp_dir();
  std::ofstream(dir + "/prompt.txt") << "The dog ran\n";
  EXPECT_EQ(run_ferrum("run -f '" + dir + "/prompt.txt'" + flags).out, p.out);
  EXPECT_EQ(run_ferrum("run -m '" + bundled_model() + "' --file '" + dir + "/prompt.txt'" + flags).out,
            p.out);
  fs::remove_all(dir);
  EXPECT_EQ(run_with_stdin("run" + flags, "The dog ran\n").out, p.out);
  EXPECT_EQ(run_ferrum("run '" + bundled_model() + "' 'The dog ran'" + flags).out, p.out);
  // Given twice is refused; a prompt in the model's place is explained.
  auto r = run_ferrum("run -p a 'b'");
  EXPECT_EQ(r.exit_code, 1);
  r = run_ferrum("run 'Once upon a time'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("use -p TEXT"), std::string::npos) << r.err;
  r = run_ferrum("run -f /nonexistent/prompt.txt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("-f/--file: cannot read '/nonexistent/prompt.txt'"), std::string::npos) << r.err;
}

TEST(RunCli, SeedIsRandomUnlessGivenAndVerboseShowsIt) {
  const RunResult a = run_ferrum("run -n 64 -v");
  const RunResult b = run_ferrum("run -n 64");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out, b.out);
  std::smatch m;
  const std::regex seed("\\[seed ([0-9]+)\\]");
  ASSERT_TRUE(std::regex_search(a.err, m, seed)) << a.err;
  // The seed -v printed repeats the run.
  EXPECT_EQ(run_ferrum("run -n 64 --seed " + m[1].str()).out, a.out);
  EXPECT_EQ(run_ferrum("run -n 64 --seed 18446744073709551615").out,
            run_ferrum("run -n 64 --seed 18446744073709551615").out);
  EXPECT_NE(run_ferrum("run -n 64 --seed -1").out, run_ferrum("run -n 64 --seed -1").out);
}

TEST(RunCli, EveryEarlyEndingSaysWhy) {
  auto r = run_ferrum("run -p x -n 5 --seed 1");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "ferrum: stopped after 5 tokens: the --max-tokens limit (5)\n");
  r = run_ferrum("run -p x -n 600 -c 8 --seed 1 --ignore-eos");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("stopped after"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the KV capacity of 8 tokens is full"), std::string::npos) << r.err;
  r = run_ferrum("run -p x -n -1 --ignore-eos --seed 1");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("the model's context of 512 tokens is full"), std::string::npos) << r.err;
  // The model's own end (or a stop string) is no news.
  r = run_ferrum("run -p '' --temperature 0 -n 200 --stop ' named'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
}

TEST(RunCli, ConstrainedOutputCutShortFailsUnlessPartialIsAllowed) {
  const std::string dir = temp_dir();
  const std::string schema = dir + "/schema.json";
  std::ofstream(schema)
      << R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})";
  auto r = run_ferrum("run -p x -n 5 --seed 1 --json-schema '" + schema + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("ferrum: error: stopped after 5 tokens: the --max-tokens limit (5), so the output is "
                        "incomplete for --json-schema",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_ferrum("run -p x -n 5 --seed 1 --allow-partial --json-schema '" + schema + "'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "ferrum: stopped after 5 tokens: the --max-tokens limit (5)\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferrum::test
