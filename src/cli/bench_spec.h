// `ferrum bench --draft-model D | --spec-ngram`: greedy generation with speculative decoding
// against plain decoding of the same request, alternated in one run.
#pragma once

#include <string>

#include "cli/commands.h"
#include "cli/spec_flags.h"

namespace ferrum::cli {

struct SpecBenchFlags {
  int n_gen = 128, reps = 3;
  std::string prompt;  // empty: a built-in text that quotes itself
  bool json = false;
};

int run_spec_bench(const ModelFlags& model, const SpecFlags& spec, const SpecBenchFlags& f);

}  // namespace ferrum::cli
