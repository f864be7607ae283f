// The `ferrum` command line as one object: every sub-command registered on a CLI11 app, argument
// parsing with ferrum's error contract (one "ferrum: error: ..." line naming the flag, exit 1),
// `ferrum help [COMMAND]`, and the run of the parsed command. main() is Cli().main(argc, argv);
// the tests and the argv fuzz target build a Cli to inspect or parse without running anything.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>

#include "cli/commands.h"

namespace ferrum::cli {

class Cli {
 public:
  Cli();
  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;

  // Parses argv. Returns the exit code when parsing ends the program (help or version printed,
  // or an argument error reported on stderr); nullopt when a command is ready to run().
  std::optional<int> parse(int argc, const char* const* argv);
  // Runs the parsed command; an error is reported as one line on stderr with exit code 1.
  int run();
  int main(int argc, const char* const* argv);

  CLI::App& app() { return app_; }

 private:
  // The one-line description of a parse error, in ferrum's words.
  std::string describe(const CLI::ParseError& e) const;
  std::optional<int> show_help();

  CLI::App app_;
  std::map<CLI::App*, Runner> runners_;
  CLI::App* help_ = nullptr;
  std::string help_topic_;
};

// The word of `candidates` closest to `word` (edit distance), or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ferrum::cli
