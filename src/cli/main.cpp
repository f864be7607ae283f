// ferrum: run transformer language models on the CPU.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "core/fail.h"

int main(int argc, char** argv) {
  CLI::App app{"ferrum: run transformer language models on your own machine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ferrum 0.1.0");
  std::map<CLI::App*, ferrum::cli::Runner> runners;
  auto add = [&](ferrum::cli::Runner (*fn)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    ferrum::cli::Runner r = fn(app);
    runners[app.get_subcommands({})[before]] = std::move(r);
  };
  add(ferrum::cli::add_run);
  add(ferrum::cli::add_eval);
  add(ferrum::cli::add_info);
  add(ferrum::cli::add_convert);
  add(ferrum::cli::add_quantize);
  add(ferrum::cli::add_tokenize);
  add(ferrum::cli::add_embed);
  add(ferrum::cli::add_detokenize);
  add(ferrum::cli::add_template);
  add(ferrum::cli::add_serve);
  add(ferrum::cli::add_bench);
  add(ferrum::cli::add_grammar_bench);
  add(ferrum::cli::add_export_lora);
  add(ferrum::cli::add_make_model);
  add(ferrum::cli::add_make_lora);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const ferrum::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ferrum: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ferrum: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
