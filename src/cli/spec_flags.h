// Speculative decoding's command-line flags, shared by run, serve and bench, and what they
// build: the draft model (when one is given) and the engine's SpecOptions.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "engine/engine.h"
#include "ferrum/loader.h"

namespace ferrum::cli {

struct SpecFlags {
  std::string draft_model;
  bool ngram = false;
  int draft_max = 5;
  int max_batch = 0;
  float p_min = 0.0f;
  bool fixed = false;
  int ngram_min = 2, ngram_max = 4;

  void add(CLI::App* app);
  bool enabled() const { return ngram || !draft_model.empty(); }
};

struct SpecSetup {
  std::unique_ptr<LoadedModel> draft;  // the draft model, kept alive next to the engine
  SpecOptions options;                 // no proposer when the flags ask for none
};

// Loads the draft model (same threads and precision as the target) and checks its vocabulary
// against the target's; throws naming the problem.
SpecSetup make_spec(const SpecFlags& f, const ModelFlags& model, const LoadedModel& target);

}  // namespace ferrum::cli
