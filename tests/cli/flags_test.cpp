// The command line's error contract, flag by flag: every option of every command is tried with
// bad values (non-numbers, negatives, huge, empty, unknown choices) and must be refused with one
// "ferrum: error:" line that names the flag, exit code 1, and no number a person cannot read.
// The options come from the parser itself, so a flag added without a check fails here.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "cli/app.h"
#include "cli/flag_checks.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

using cli::Cli;

struct Parsed {
  std::optional<int> code;
  std::string err;
};

Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ferrum");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  Cli cli;
  testing::internal::CaptureStderr();
  Parsed p;
  p.code = cli.parse(static_cast<int>(argv.size()), argv.data());
  p.err = testing::internal::GetCapturedStderr();
  return p;
}

// One line, "ferrum: error: " first, naming `needle`, with no run of more than 20 digits.
void expect_one_error_line(const Parsed& p, const std::string& needle, const std::string& what) {
  ASSERT_TRUE(p.code.has_value()) << what << ": accepted";
  EXPECT_EQ(*p.code, 1) << what;
  EXPECT_EQ(p.err.rfind("ferrum: error: ", 0), 0u) << what << ": " << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << what << ": " << p.err;
  EXPECT_NE(p.err.find(needle), std::string::npos) << what << ": " << p.err;
  static const std::regex long_number("[0-9]{21,}");
  EXPECT_FALSE(std::regex_search(p.err, long_number)) << what << ": " << p.err;
}

// Options whose value is free text (paths, prompts, names): any non-empty text parses, and what
// it names is checked when the command runs.
const std::set<std::string> kFreeText = {"--model",       "--tokenizer",
                                         "--prompt",      "--system",
                                         "--lora",        "--lora-each",
                                         "--spec-prompt", "--messages",
                                         "--template",    "--vars",
                                         "--out",         "--embeds-in",
                                         "--logits-npy",  "--hidden-out",
                                         "--api-key",     "--chat-template-file",
                                         "--model-name",  "--served-model-alias",
                                         "--tokens"};

std::vector<std::string> bad_values(const CLI::Option& o) {
  auto has = [&](const char* name) {
    try {
      const_cast<CLI::Option&>(o).get_validator(name);
      return true;
    } catch (const CLI::OptionNotFound&) {
      return false;
    }
  };
  if (has(cli::kWhole)) return {"abc", "1.5", "", "-99999999999", "99999999999999999999999", "0x10", "1\n2"};
  if (has(cli::kReal)) return {"abc", "", "nan", "1e999", "-99999999999", "0.5\n"};
  if (has(cli::kSeed)) return {"abc", "-2", "1.5", "99999999999999999999999"};
  if (has(cli::kChoice)) return {"bogus", "", "f16\nint8"};
  if (has(cli::kText)) return {""};
  return {};
}

TEST(CliFlags, EveryFlagRefusesBadValuesWithOneLineNamingIt) {
  Cli cli;
  int cases = 0;
  for (CLI::App* sub : cli.app().get_subcommands([](const CLI::App*) { return true; })) {
    for (const CLI::Option* o : sub->get_options()) {
      if (!o->nonpositional() || o->get_expected_min() == 0 || o->get_lnames().empty()) continue;  // flags
      const std::string flag = "--" + o->get_lnames()[0];
      // The flag last, without its value.
      expect_one_error_line(parse({sub->get_name(), flag}), flag + ": needs a value",
                            flag + " without a value");
      const std::vector<std::string> values = bad_values(*o);
      if (values.empty()) {
        EXPECT_TRUE(kFreeText.count(flag)) << "ferrum " << sub->get_name() << " " << flag
                                           << " has no check of its value (cli/flag_checks.h)";
        continue;
      }
      // The flag last, without its value.
      expect_one_error_line(parse({sub->get_name(), flag}), flag + ": needs a value",
                            flag + " without a value");
      for (const std::string& v : values) {
        const std::string what = "ferrum " + sub->get_name() + " " + flag + "=" + v;
        expect_one_error_line(parse({sub->get_name(), flag + "=" + v}), flag, what);
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 150);
}

TEST(CliFlags, UnknownCommandsAndOptionsSuggestTheClosest) {
  expect_one_error_line(parse({"runn"}), "did you mean run?", "runn");
  expect_one_error_line(parse({"run", "--top-kk", "3"}), "did you mean --top-k?", "--top-kk");
  expect_one_error_line(parse({"run", "--bogus"}), "'--bogus'", "--bogus");
  expect_one_error_line(parse({}), "no command given", "no command");
  expect_one_error_line(parse({"eval"}), "--out", "eval without --out");
  expect_one_error_line(parse({"help", "rnu"}), "did you mean run?", "help rnu");
}

TEST(CliFlags, AFlagGivenTwiceKeepsTheLast) {
  const Parsed p = parse({"run", "-t", "1", "-t", "2", "-n", "3"});
  EXPECT_FALSE(p.code.has_value()) << p.err;
}

TEST(CliFlags, HelpShowsEveryDefault) {
  auto r = run_ferrum("help run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"=256", "=0.8", "=random", "=40", "=all cores", "=f16", "--ctx-size", "--file"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " in:\n" << r.out;
  EXPECT_EQ(run_ferrum("help").exit_code, 0);
  EXPECT_NE(run_ferrum("help").out.find("serve"), std::string::npos);
  EXPECT_EQ(run_ferrum("run --help").exit_code, 0);
}

// A leading zero is decimal, as people write it (CLI11 alone reads "010" as octal 8).
TEST(CliFlags, LeadingZerosAreDecimal) {
  auto r = run_ferrum("run -p x -n 010 --seed 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "ferrum: stopped after 10 tokens: the --max-tokens limit (10)\n");
}

// Values the parser lets through are still checked where they meet the system.
TEST(CliFlags, ThreadsAndEnvironmentNeverAbort) {
  auto r = run_ferrum("run -t 100000 -n 2 -p x");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
  r = run_ferrum("run -t 64 -n 2 -p x --seed 1");  // more than the cores: cut, with a note
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const ScopedEnv env("FERRUM_THREADS", "abc");
  r = run_ferrum("run -n 2 -p x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ferrum: error: FERRUM_THREADS: expects a whole number from 1 to 4096, got 'abc'\n");
}

}  // namespace
}  // namespace ferrum::test
