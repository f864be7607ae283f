// `ferrum run`: generate text from a prompt (or interactively), streaming it as it is produced.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "chat/chat_prompt.h"
#include "cli/commands.h"
#include "core/fail.h"
#include "engine/generate.h"
#include "engine/loader.h"

namespace ferrum::cli {
namespace {

struct RunFlags {
  ModelFlags model;
  std::optional<std::string> prompt;
  GenerateOptions gen;
  bool verbose = false;
  bool no_chat = false;
  std::string system;
};

// Streams the continuation of `prompt` (appended to sequence `seq`) to stdout; returns the text.
std::string stream_generate(LoadedModel& lm, KvCache& kv, int seq, std::span<const int32_t> prompt,
                            const RunFlags& f, bool echo) {
  StreamDecoder dec(*lm.tokenizer, /*skip_special=*/true);
  std::string text;
  // Echo the prompt (as llama.cpp does) through the same decoder, so spacing stays consistent.
  for (int32_t id : prompt) {
    const std::string piece = dec.push(id);
    if (echo) std::fwrite(piece.data(), 1, piece.size(), stdout);
  }
  GenerateResult r = generate(*lm.model, kv, *lm.tokenizer, seq, prompt, f.gen, [&](int32_t id) {
    const std::string piece = dec.push(id);
    text += piece;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  const std::string rest = dec.flush();
  text += rest;
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (f.verbose) {
    const size_t n = r.tokens.size();
    std::fprintf(stderr,
                 "[prompt %zu tokens in %.3f s (%.1f tok/s); generated %zu tokens in %.3f s (%.1f tok/s); "
                 "finish: %s]\n",
                 prompt.size(), r.prefill_seconds, prompt.size() / std::max(r.prefill_seconds, 1e-9), n,
                 r.decode_seconds, n > 1 ? (n - 1) / std::max(r.decode_seconds, 1e-9) : 0.0,
                 r.finish_reason.c_str());
  }
  return text;
}

// Interactive chat with the model's own template. The conversation is re-rendered every turn;
// the KV cache keeps the longest common token prefix and only the rest is prefilled.
void chat_loop(LoadedModel& lm, KvCache& kv, const RunFlags& f) {
  const chat::ChatPrompt prompt(*lm.tokenizer);
  nlohmann::json messages = nlohmann::json::array();
  if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
  std::vector<int32_t> cached;  // tokens now in sequence 0
  std::fprintf(stderr, "ferrum chat: type a message and press Enter (Ctrl-D: quit)\n");
  std::string line;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    std::vector<int32_t> ids = prompt.tokens(messages, nullptr, nullptr);
    size_t common = 0;
    while (common < cached.size() && common + 1 < ids.size() && cached[common] == ids[common]) ++common;
    if (kv.seq_len(0) > 0) kv.truncate(0, std::min<int64_t>(common, kv.seq_len(0)));
    cached.assign(ids.begin(), ids.end());
    std::string reply;
    try {
      reply = stream_generate(lm, kv, 0, std::span(ids).subspan(common), f, false);
    } catch (const CapacityError& e) {
      std::fprintf(stderr, "ferrum: %s (conversation reset)\n", e.what());
      kv.release(0);
      cached.clear();
      messages = nlohmann::json::array();
      continue;
    }
    // The reply's tokens are in the cache too; the next turn keeps whatever prefix still matches.
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
}

int run(RunFlags& f) {
  LoadedModel lm = load_model(f.model.model_path(), f.model.options(), f.model.tokenizer);
  const Tokenizer& tok = *lm.tokenizer;
  std::unique_ptr<KvCache> kv = KvCache::for_model(*lm.model, f.model.kv_options());
  if (f.prompt) {
    std::vector<int32_t> ids = tok.encode(*f.prompt, /*add_special=*/true, /*parse_special=*/false);
    if (ids.empty())
      fail("the prompt encodes to no tokens and the model adds no BOS token; give a non-empty --prompt");
    stream_generate(lm, *kv, 0, ids, f, true);
    return 0;
  }
  const bool tty = isatty(STDIN_FILENO);
  if (!tty) {
    // No prompt and no terminal: generate from the start of a text (a story for TinyStories).
    std::vector<int32_t> ids = tok.encode("", true, false);
    if (ids.empty()) fail("no --prompt given and the model adds no BOS token to start from");
    stream_generate(lm, *kv, 0, ids, f, true);
    return 0;
  }
  if (!tok.chat_template().empty() && !f.no_chat) {
    chat_loop(lm, *kv, f);
    return 0;
  }
  std::fprintf(
      stderr,
      "ferrum interactive mode: type a prompt and press Enter (empty line: free text, Ctrl-D: quit)\n");
  std::string line;
  int seq = 0;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    std::vector<int32_t> ids = tok.encode(line, true, false);
    if (ids.empty()) continue;
    try {
      stream_generate(lm, *kv, seq, ids, f, true);
    } catch (const CapacityError& e) {
      std::fprintf(stderr, "ferrum: %s\n", e.what());
    }
    if (kv->has(seq)) kv->release(seq);
  }
  return 0;
}

}  // namespace

Runner add_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "generate text from a prompt, streaming it as it is produced");
  f->model.add(sub, true);
  sub->add_option("-p,--prompt", f->prompt, "prompt text (no prompt on a terminal: interactive loop)");
  sub->add_option("-n,--max-tokens", f->gen.max_tokens, "maximum number of tokens to generate")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--temperature,--temp", f->gen.sampling.temperature, "sampling temperature; 0 = greedy");
  sub->add_option("--top-k", f->gen.sampling.top_k, "keep the k most likely tokens (0 = off)");
  sub->add_option("--top-p", f->gen.sampling.top_p, "nucleus sampling threshold (1 = off)");
  sub->add_option("--min-p", f->gen.sampling.min_p,
                  "drop tokens below min-p times the top probability (0 = off)");
  sub->add_option("--repeat-penalty", f->gen.sampling.repeat_penalty, "repetition penalty (1 = off)");
  sub->add_option("--presence-penalty", f->gen.sampling.presence_penalty, "presence penalty (0 = off)");
  sub->add_option("--frequency-penalty", f->gen.sampling.frequency_penalty, "frequency penalty (0 = off)");
  sub->add_option("--penalty-last-n", f->gen.sampling.penalty_last_n,
                  "tokens the penalties look back over (-1 = all)");
  sub->add_option("-s,--seed", f->gen.sampling.seed, "random seed (same seed, same output)");
  sub->add_flag(
      "--ignore-eos", [f](int64_t) { f->gen.stop_at_eog = false; },
      "keep generating past end-of-generation tokens");
  sub->add_flag("-v,--verbose", f->verbose, "print timing to stderr");
  sub->add_flag("--no-chat", f->no_chat,
                "interactive mode: plain text continuation even if the model has a chat template");
  sub->add_option("--system", f->system, "interactive chat: a system message");
  return [f] {
    f->gen.sampling.validate();
    return run(*f);
  };
}

}  // namespace ferrum::cli
