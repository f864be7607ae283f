// `ferrum run`: generate text from a prompt (or interactively), streaming it as it is produced.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "engine/generate.h"
#include "engine/loader.h"
#include "ferrum/error.h"

namespace ferrum::cli {
namespace {

struct RunFlags {
  ModelFlags model;
  std::optional<std::string> prompt;
  GenerateOptions gen;
  bool verbose = false;
};

void stream_generate(LoadedModel& lm, int seq, const std::vector<int32_t>& prompt, const RunFlags& f) {
  StreamDecoder dec(*lm.tokenizer, /*skip_special=*/true);
  // Echo the prompt (as llama.cpp does) through the same decoder, so spacing stays consistent.
  for (int32_t id : prompt) {
    const std::string piece = dec.push(id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
  }
  GenerateResult r = generate(*lm.model, *lm.tokenizer, seq, prompt, f.gen, [&](int32_t id) {
    const std::string piece = dec.push(id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  const std::string rest = dec.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (f.verbose) {
    const size_t n = r.tokens.size();
    std::fprintf(stderr, "[prompt %zu tokens in %.3f s (%.1f tok/s); generated %zu tokens in %.3f s (%.1f tok/s); finish: %s]\n",
                 prompt.size(), r.prefill_seconds, prompt.size() / std::max(r.prefill_seconds, 1e-9), n,
                 r.decode_seconds, n > 1 ? (n - 1) / std::max(r.decode_seconds, 1e-9) : 0.0, r.finish_reason.c_str());
  }
}

int run(RunFlags& f) {
  LoadedModel lm = load_model(f.model.model_path(), f.model.options(), f.model.tokenizer);
  const Tokenizer& tok = *lm.tokenizer;
  if (f.prompt) {
    std::vector<int32_t> ids = tok.encode(*f.prompt, /*add_special=*/true, /*parse_special=*/false);
    if (ids.empty()) fail("the prompt encodes to no tokens and the model adds no BOS token; give a non-empty --prompt");
    stream_generate(lm, 0, ids, f);
    return 0;
  }
  const bool tty = isatty(STDIN_FILENO);
  if (!tty) {
    // No prompt and no terminal: generate from the start of a text (a story for TinyStories).
    std::vector<int32_t> ids = tok.encode("", true, false);
    if (ids.empty()) fail("no --prompt given and the model adds no BOS token to start from");
    stream_generate(lm, 0, ids, f);
    return 0;
  }
  std::fprintf(stderr, "ferrum interactive mode: type a prompt and press Enter (empty line: free text, Ctrl-D: quit)\n");
  std::string line;
  int seq = 0;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    std::vector<int32_t> ids = tok.encode(line, true, false);
    if (ids.empty()) continue;
    try {
      stream_generate(lm, seq, ids, f);
    } catch (const CapacityError& e) {
      std::fprintf(stderr, "ferrum: %s\n", e.what());
    }
    lm.model->release(seq);
  }
  return 0;
}

}  // namespace

Runner add_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "generate text from a prompt, streaming it as it is produced");
  f->model.add(sub, true);
  sub->add_option("-p,--prompt", f->prompt, "prompt text (no prompt on a terminal: interactive loop)");
  sub->add_option("-n,--max-tokens", f->gen.max_tokens, "maximum number of tokens to generate")->check(CLI::NonNegativeNumber);
  sub->add_option("--temperature,--temp", f->gen.sampling.temperature, "sampling temperature; 0 = greedy");
  sub->add_option("--top-k", f->gen.sampling.top_k, "keep the k most likely tokens (0 = off)");
  sub->add_option("--top-p", f->gen.sampling.top_p, "nucleus sampling threshold (1 = off)");
  sub->add_option("--min-p", f->gen.sampling.min_p, "drop tokens below min-p times the top probability (0 = off)");
  sub->add_option("--repeat-penalty", f->gen.sampling.repeat_penalty, "repetition penalty (1 = off)");
  sub->add_option("--presence-penalty", f->gen.sampling.presence_penalty, "presence penalty (0 = off)");
  sub->add_option("--frequency-penalty", f->gen.sampling.frequency_penalty, "frequency penalty (0 = off)");
  sub->add_option("--penalty-last-n", f->gen.sampling.penalty_last_n, "tokens the penalties look back over (-1 = all)");
  sub->add_option("-s,--seed", f->gen.sampling.seed, "random seed (same seed, same output)");
  sub->add_flag("--ignore-eos", [f](int64_t) { f->gen.stop_at_eog = false; }, "keep generating past end-of-generation tokens");
  sub->add_flag("-v,--verbose", f->verbose, "print timing to stderr");
  return [f] {
    f->gen.sampling.validate();
    return run(*f);
  };
}

}  // namespace ferrum::cli
