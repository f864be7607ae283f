#include "cli/app.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "dist/transport.h"

namespace ferrum::cli {
namespace {

constexpr const char* kVersion = "ferrum 0.1.0";

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_group().empty()) names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string c = closest(word, candidates);
  return c.empty() ? "" : " (did you mean " + c + "?)";
}

// CLI11's messages, where one still gets through, without numbers a person cannot read.
std::string tame(std::string msg) {
  static const std::regex huge("[0-9]{21,}(\\.[0-9]+)?");
  return std::regex_replace(msg, huge, "<huge number>");
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

Cli::Cli() : app_("ferrum: run transformer language models on your own machine", "ferrum") {
  // A flag given twice keeps its last value (as llama.cpp does); --help shows every default.
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  app_.set_version_flag("--version", kVersion);
  app_.require_subcommand(1);
  app_.footer("`ferrum help COMMAND` or `ferrum COMMAND --help` shows a command's flags.");
  auto add = [&](Runner (*fn)(CLI::App&)) {
    const size_t before = app_.get_subcommands({}).size();
    Runner r = fn(app_);
    runners_[app_.get_subcommands({})[before]] = std::move(r);
  };
  add(add_run);
  add(add_eval);
  add(add_info);
  add(add_convert);
  add(add_quantize);
  add(add_tokenize);
  add(add_embed);
  add(add_detokenize);
  add(add_template);
  add(add_serve);
  add(add_bench);
  add(add_grammar_bench);
  add(add_export_lora);
  add(add_make_model);
  add(add_make_lora);
  help_ = app_.add_subcommand("help", "show the commands, or one command's flags");
  help_->add_option("command", help_topic_, "the command to explain")->always_capture_default(false);
}

std::optional<int> Cli::parse(int argc, const char* const* argv) {
  help_topic_.clear();
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app_.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app_.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app_.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ferrum: error: %s\n", one_line(describe(e)).c_str());
    return 1;
  }
  if (help_->parsed()) return show_help();
  return std::nullopt;
}

std::optional<int> Cli::show_help() {
  // App::help() would show the help of the parsed `help` command itself.
  if (help_topic_.empty()) {
    std::fputs(app_.get_formatter()->make_help(&app_, "ferrum", CLI::AppFormatMode::Normal).c_str(), stdout);
    return 0;
  }
  for (CLI::App* sub : app_.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == help_topic_ && sub != help_) {
      std::fputs(
          sub->get_formatter()->make_help(sub, "ferrum " + help_topic_, CLI::AppFormatMode::Normal).c_str(),
          stdout);
      return 0;
    }
  std::fprintf(stderr, "ferrum: error: help: '%s' is not a command%s\n", help_topic_.c_str(),
               did_you_mean(help_topic_, command_names(app_)).c_str());
  return 1;
}

std::string Cli::describe(const CLI::ParseError& e) const {
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app_.get_subcommands()) sub = s;
  const std::string cmd = sub ? "ferrum " + sub->get_name() : "ferrum";
  const std::string what = e.what();
  const std::vector<std::string> rest = app_.remaining(/*recurse=*/true);
  if (!sub) {
    if (!rest.empty() && (rest[0].empty() || rest[0][0] != '-'))
      return fmt::format("{} is not a command{}; `ferrum --help` lists them", shown_value(rest[0]),
                         did_you_mean(rest[0], command_names(app_)));
    if (!rest.empty())
      return fmt::format("{}: no such option of ferrum (a command's options go after it)",
                         shown_value(rest[0]));
    return "no command given; try `ferrum run` (the bundled model) or `ferrum --help`";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && !rest.empty()) {
    const std::string& first = rest[0];
    if (!first.empty() && first[0] == '-')
      return fmt::format("{}: no such option of {}{}; `{} --help` lists them", shown_value(first), cmd,
                         did_you_mean(first.substr(0, first.find('=')), option_names(*sub)), cmd);
    return fmt::format("{}: unexpected argument of {}; `{} --help` shows its arguments", shown_value(first),
                       cmd, cmd);
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    static const std::regex req("^(\\S+) is required$");
    std::smatch m;
    if (std::regex_match(what, m, req))
      return fmt::format("{}: {} needs it; `{} --help` shows its arguments", m[1].str(), cmd, cmd);
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    static const std::regex missing("^(\\S+): [0-9]+ required (\\S+?)(:(.*))? missing$");
    std::smatch m;
    if (std::regex_match(what, m, missing))
      return fmt::format("{}: needs a value{}", m[1].str(), m[4].matched ? " (" + m[4].str() + ")" : "");
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    static const std::regex conv("^Could not convert: (\\S+) = (.*)$");
    std::smatch m;
    if (std::regex_match(what, m, conv))
      return fmt::format("{}: cannot use {}", m[1].str(), shown_value(m[2].str()));
  }
  return tame(what);
}

int Cli::run() {
  try {
    for (auto& [sub, runner] : runners_)
      if (sub->parsed()) return runner();
  } catch (const LaterRankDone&) {  // a later rank: its part served to the end
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ferrum: error: %s\n", e.what());
    std::fflush(stderr);
    dist::mpi_abort(1);  // over MPI, the other ranks wait for this one: end them too
    return 1;
  }
  return 0;
}

int Cli::main(int argc, const char* const* argv) {
  if (std::optional<int> done = parse(argc, argv)) return *done;
  return run();
}

}  // namespace ferrum::cli
