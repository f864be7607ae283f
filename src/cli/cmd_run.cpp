// `ferrum run`: generate text from a prompt (or interactively), streaming it as it is produced.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "chat/chat_prompt.h"
#include "cli/commands.h"
#include "cli/spec_flags.h"
#include "core/fail.h"
#include "core/profile.h"
#include "engine/engine.h"
#include "engine/loader.h"
#include "grammar/grammar_cache.h"

namespace ferrum::cli {
namespace {

struct RunFlags {
  ModelFlags model;
  SpecFlags spec;
  std::optional<std::string> prompt;
  int max_tokens = 256;
  SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<std::string> stop;
  bool verbose = false;
  bool no_chat = false;
  bool layout_given = false;
  std::string system;
  std::string grammar_file, schema_file;  // constrained decoding (one of them)
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The grammar of --grammar / --json-schema (null without either); errors name the file.
std::shared_ptr<const grammar::CompiledGrammar> load_grammar(const RunFlags& f, const Tokenizer& tok) {
  if (f.grammar_file.empty() && f.schema_file.empty()) return nullptr;
  if (!f.grammar_file.empty() && !f.schema_file.empty())
    fail("--grammar and --json-schema exclude each other");
  const bool gbnf = !f.grammar_file.empty();
  const std::string& path = gbnf ? f.grammar_file : f.schema_file;
  grammar::GrammarSpec spec{gbnf ? grammar::GrammarSpec::Kind::Gbnf : grammar::GrammarSpec::Kind::JsonSchema,
                            read_file(path)};
  try {
    return grammar::GrammarCache(tok, 1).get(spec);
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
}

// Generation through the engine (one sequence at a time), so `ferrum run` and `ferrum serve`
// share one generation loop and one output path.
class RunSession {
 public:
  RunSession(LoadedModel& lm, const RunFlags& f, bool chat) : lm_(lm), f_(f) {
    EngineOptions eo;
    eo.kv = f.model.kv_options();
    // A chat keeps its conversation's prefix in the cache between turns (paged prefix cache).
    if (chat && !f.layout_given && std::getenv("FERRUM_KV_LAYOUT") == nullptr) {
      eo.kv.layout = "paged";
      eo.kv.prefix_cache = true;
    }
    eo.max_num_seqs = 1;
    eo.max_batched_tokens = 512;
    eo.max_waiting = 0;
    spec_ = make_spec(f.spec, f.model, lm);
    eo.spec = spec_.options;
    engine_ = std::make_unique<Engine>(*lm.model, *lm.tokenizer, eo);
    grammar_ = load_grammar(f, *lm.tokenizer);
    lora_ = f.model.load_adapter(*lm.model);
  }

  // Streams the continuation of `prompt` to stdout (after the prompt's own text when echo is
  // set); returns the generated text.
  std::string stream(const std::vector<int32_t>& prompt, bool echo) {
    std::string shown;
    if (echo) {
      StreamDecoder dec(*lm_.tokenizer, /*skip_special=*/true);
      for (int32_t id : prompt) shown += dec.push(id);
      shown += dec.flush();
      std::fwrite(shown.data(), 1, shown.size(), stdout);
    }
    RequestParams p;
    p.prompt = prompt;
    const int64_t room = engine_->kv_capacity() - static_cast<int64_t>(prompt.size());
    p.max_tokens = room > 0 ? static_cast<int>(std::min<int64_t>(f_.max_tokens, room)) : f_.max_tokens;
    p.sampling = f_.sampling;
    p.ignore_eos = f_.ignore_eos;
    p.stop = f_.stop;
    p.at_text_start = shown.empty();
    p.grammar = grammar_;
    p.lora = lora_;
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<RequestHandle> h = engine_->submit(std::move(p));
    std::string text;
    double first_s = 0;
    while (true) {
      std::optional<RequestEvent> ev = h->next(std::chrono::milliseconds(1000));
      if (!ev) continue;
      if (first_s == 0 && !ev->tokens.empty()) first_s = seconds_since(t0);
      text += ev->text;
      std::fwrite(ev->text.data(), 1, ev->text.size(), stdout);
      std::fflush(stdout);
      if (!ev->finished) continue;
      if (ev->finish_reason == "error") fail("{}", ev->error);
      std::fputc('\n', stdout);
      std::fflush(stdout);
      if (f_.verbose) {
        report(prompt.size(), ev->completion_tokens, first_s, seconds_since(t0) - first_s, *ev);
        if (spec_.options.proposer) report_spec(engine_->stats());
      }
      return text;
    }
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  static void report(size_t n_prompt, int n, double prefill_s, double decode_s, const RequestEvent& ev) {
    std::fprintf(
        stderr,
        "[prompt %zu tokens (%d from the cache) in %.3f s (%.1f tok/s); generated %d tokens in %.3f s "
        "(%.1f tok/s); finish: %s]\n",
        n_prompt, ev.cached_tokens, prefill_s, n_prompt / std::max(prefill_s, 1e-9), n, decode_s,
        n > 1 ? (n - 1) / std::max(decode_s, 1e-9) : 0.0, ev.finish_reason.c_str());
  }

  void report_spec(const EngineStats& st) const {
    std::fprintf(
        stderr,
        "[speculative (%s): %llu of %llu proposed tokens accepted (%.1f%%) in %llu verify steps, %.2f tokens "
        "per verify step]\n",
        spec_.options.proposer->name().c_str(), static_cast<unsigned long long>(st.spec_accepted),
        static_cast<unsigned long long>(st.spec_proposed),
        st.spec_proposed ? 100.0 * st.spec_accepted / st.spec_proposed : 0.0,
        static_cast<unsigned long long>(st.spec_verify_steps),
        st.spec_verify_steps ? 1.0 + double(st.spec_accepted) / st.spec_verify_steps : 0.0);
  }

  LoadedModel& lm_;
  const RunFlags& f_;
  SpecSetup spec_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<const grammar::CompiledGrammar> grammar_;
  std::shared_ptr<const LoraAdapter> lora_;  // --lora, for every request
};

// Interactive chat with the model's own template. The conversation is re-rendered every turn;
// the prefix cache keeps what the previous turns computed.
void chat_loop(LoadedModel& lm, const RunFlags& f) {
  RunSession runner(lm, f, /*chat=*/true);
  const chat::ChatPrompt prompt(*lm.tokenizer);
  nlohmann::json messages = nlohmann::json::array();
  if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
  std::fprintf(stderr, "ferrum chat: type a message and press Enter (Ctrl-D: quit)\n");
  std::string line;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    std::string reply;
    try {
      reply = runner.stream(prompt.tokens(messages, nullptr, nullptr), false);
    } catch (const Error& e) {  // the conversation outgrew the context
      std::fprintf(stderr, "ferrum: %s (conversation reset)\n", e.what());
      messages = nlohmann::json::array();
      continue;
    }
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
}

void prompt_loop(LoadedModel& lm, const RunFlags& f) {
  RunSession runner(lm, f, /*chat=*/false);
  std::fprintf(
      stderr,
      "ferrum interactive mode: type a prompt and press Enter (empty line: free text, Ctrl-D: quit)\n");
  std::string line;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    std::vector<int32_t> ids = lm.tokenizer->encode(line, true, false);
    if (ids.empty()) continue;
    try {
      runner.stream(ids, true);
    } catch (const Error& e) {
      std::fprintf(stderr, "ferrum: %s\n", e.what());
    }
  }
}

int run(RunFlags& f) {
  LoadedModel lm = load_model(f.model.model_path(), f.model.options(), f.model.tokenizer);
  const Tokenizer& tok = *lm.tokenizer;
  if (f.prompt || !isatty(STDIN_FILENO)) {
    // No prompt and no terminal: generate from the start of a text (a story for TinyStories).
    std::vector<int32_t> ids =
        tok.encode(f.prompt.value_or(""), /*add_special=*/true, /*parse_special=*/false);
    if (ids.empty())
      fail("{}",
           f.prompt
               ? "the prompt encodes to no tokens and the model adds no BOS token; give a non-empty --prompt"
               : "no --prompt given and the model adds no BOS token to start from");
    RunSession(lm, f, false).stream(ids, true);
  } else if (!tok.chat_template().empty() && !f.no_chat) {
    chat_loop(lm, f);
  } else {
    prompt_loop(lm, f);
  }
  if (profile::enabled()) std::fprintf(stderr, "%s", profile::format(profile::take(), "run").c_str());
  return 0;
}

}  // namespace

Runner add_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "generate text from a prompt, streaming it as it is produced");
  f->model.add(sub, true);
  f->spec.add(sub);
  f->model.add_lora(sub);
  sub->add_option("-p,--prompt", f->prompt, "prompt text (no prompt on a terminal: interactive loop)");
  sub->add_option("-n,--max-tokens", f->max_tokens, "maximum number of tokens to generate")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--temperature,--temp", f->sampling.temperature, "sampling temperature; 0 = greedy");
  sub->add_option("--top-k", f->sampling.top_k, "keep the k most likely tokens (0 = off)");
  sub->add_option("--top-p", f->sampling.top_p, "nucleus sampling threshold (1 = off)");
  sub->add_option("--min-p", f->sampling.min_p,
                  "drop tokens below min-p times the top probability (0 = off)");
  sub->add_option("--repeat-penalty", f->sampling.repeat_penalty, "repetition penalty (1 = off)");
  sub->add_option("--presence-penalty", f->sampling.presence_penalty, "presence penalty (0 = off)");
  sub->add_option("--frequency-penalty", f->sampling.frequency_penalty, "frequency penalty (0 = off)");
  sub->add_option("--penalty-last-n", f->sampling.penalty_last_n,
                  "tokens the penalties look back over (-1 = all)");
  sub->add_option("-s,--seed", f->sampling.seed, "random seed (same seed, same output)");
  sub->add_flag("--ignore-eos", f->ignore_eos, "keep generating past end-of-generation tokens");
  sub->add_option("--stop", f->stop, "stop before this text (repeatable; the stop text is not printed)");
  sub->add_flag("-v,--verbose", f->verbose, "print timing to stderr");
  sub->add_flag("--no-chat", f->no_chat,
                "interactive mode: plain text continuation even if the model has a chat template");
  sub->add_option("--system", f->system, "interactive chat: a system message");
  sub->add_option("--grammar", f->grammar_file, "constrain the output to this GBNF grammar (file)");
  sub->add_option("--json-schema", f->schema_file,
                  "constrain the output to JSON matching this schema (file)");
  return [f, sub] {
    f->layout_given = sub->count("--kv-layout") > 0;
    f->sampling.validate();
    return run(*f);
  };
}

}  // namespace ferrum::cli
