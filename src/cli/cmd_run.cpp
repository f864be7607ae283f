// `ferrum run`: generate text from a prompt (or interactively), streaming it as it is produced.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "chat/chat_prompt.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/interactive.h"
#include "cli/spec_flags.h"
#include "core/fail.h"
#include "core/profile.h"
#include "engine/engine.h"
#include "grammar/grammar_cache.h"
#include "loading/loader.h"

namespace ferrum::cli {
namespace {

struct RunFlags {
  ModelFlags model;
  SpecFlags spec;
  std::optional<std::string> prompt;  // -p
  std::string prompt_file;            // -f
  std::string prompt_arg;             // the positional after the model, as `ollama run MODEL TEXT`
  int max_tokens = 256;               // -1: until the context is full
  SamplingParams sampling;
  std::string seed;  // "" or "-1": random
  bool ignore_eos = false;
  std::vector<std::string> stop;
  bool verbose = false;
  bool no_chat = false;
  bool layout_given = false;
  bool allow_partial = false;
  std::string system;
  std::string grammar_file, schema_file;  // constrained decoding (one of them)
};

// A prompt read from a file or a pipe ends with the newline the editor or `echo` added; llama.cpp
// drops it too, so -f, stdin and -p give the same tokens.
std::string without_final_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

// The prompt from -p, -f, the positional text or a pipe on stdin; nullopt: interactive (a terminal).
std::optional<std::string> resolve_prompt(const RunFlags& f) {
  const int given = f.prompt.has_value() + !f.prompt_file.empty() + !f.prompt_arg.empty();
  if (given > 1) fail("the prompt is given more than once (-p, -f, text after the model): give one");
  if (f.prompt) return f.prompt;
  if (!f.prompt_file.empty()) return without_final_newline(read_flag_file(f.prompt_file, "-f/--file"));
  if (!f.prompt_arg.empty()) return f.prompt_arg;
  if (isatty(STDIN_FILENO)) return std::nullopt;
  std::stringstream s;
  s << std::cin.rdbuf();
  return without_final_newline(s.str());
}

// The grammar of --grammar / --json-schema (null without either); errors name the file.
std::shared_ptr<const grammar::CompiledGrammar> load_grammar(const RunFlags& f, const Tokenizer& tok) {
  if (f.grammar_file.empty() && f.schema_file.empty()) return nullptr;
  if (!f.grammar_file.empty() && !f.schema_file.empty())
    fail("--grammar and --json-schema exclude each other");
  const bool gbnf = !f.grammar_file.empty();
  const std::string& path = gbnf ? f.grammar_file : f.schema_file;
  grammar::GrammarSpec spec{gbnf ? grammar::GrammarSpec::Kind::Gbnf : grammar::GrammarSpec::Kind::JsonSchema,
                            read_flag_file(path, gbnf ? "--grammar" : "--json-schema")};
  try {
    return grammar::GrammarCache(tok, 1).get(spec);
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
}

// How a generation ended, for the caller and the user.
struct Outcome {
  std::string text;
  std::string reason;  // the engine's finish reason: stop, length, cancelled
  int tokens = 0;
};

// Generation through the engine (one sequence at a time), so `ferrum run` and `ferrum serve`
// share one generation loop and one output path.
class RunSession {
 public:
  RunSession(LoadedModel& lm, const RunFlags& f, bool chat, bool interactive)
      : lm_(lm), f_(f), interactive_(interactive) {
    EngineOptions eo;
    eo.kv = f.model.kv_options();
    // A chat keeps its conversation's prefix in the cache between turns (paged prefix cache).
    if (chat && !f.layout_given && std::getenv("FERRUM_KV_LAYOUT") == nullptr) {
      eo.kv.layout = KvLayout::Paged;
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
    sampling_ = f.sampling;
    sampling_.seed = parse_seed(f.seed);
    if (f.verbose) std::fprintf(stderr, "[seed %llu]\n", static_cast<unsigned long long>(sampling_.seed));
  }

  bool constrained() const { return grammar_ != nullptr; }

  // Streams the continuation of `prompt` to stdout (after the prompt's own text when echo is
  // set). An ending other than end-of-generation or a stop string is told on stderr.
  Outcome stream(const std::vector<int32_t>& prompt, bool echo) {
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
    const int64_t wanted = f_.max_tokens < 0 ? room : f_.max_tokens;
    p.max_tokens = static_cast<int>(room > 0 ? std::min<int64_t>(wanted, room) : wanted);
    p.sampling = sampling_;
    p.ignore_eos = f_.ignore_eos;
    p.stop = f_.stop;
    p.at_text_start = shown.empty();
    p.grammar = grammar_;
    p.lora = lora_;
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<RequestHandle> h = engine_->submit(std::move(p));
    Outcome out;
    double first_s = 0;
    while (true) {
      if (interactive_ && take_interrupt()) h->cancel();
      std::optional<RequestEvent> ev = h->next(std::chrono::milliseconds(interactive_ ? 50 : 1000));
      if (!ev) continue;
      if (first_s == 0 && !ev->tokens.empty()) first_s = seconds_since(t0);
      out.text += ev->text;
      std::fwrite(ev->text.data(), 1, ev->text.size(), stdout);
      std::fflush(stdout);
      if (!ev->finished) continue;
      if (ev->finish_reason == "error") fail("{}", ev->error);
      std::fputc('\n', stdout);
      std::fflush(stdout);
      out.reason = ev->finish_reason;
      out.tokens = ev->completion_tokens;
      if (f_.verbose) {
        report(prompt.size(), ev->completion_tokens, first_s, seconds_since(t0) - first_s, *ev);
        if (spec_.options.proposer) report_spec(engine_->stats());
      }
      const std::string why = ending(out, prompt.size());
      if (!why.empty() && !(constrained() && !interactive_ && !f_.allow_partial))
        std::fprintf(stderr, "ferrum: %s\n", why.c_str());
      return out;
    }
  }

  // Why generation stopped, in words, when it was not the model's own end or a stop string.
  std::string ending(const Outcome& o, size_t n_prompt) const {
    if (o.reason == "cancelled") return fmt::format("stopped after {} tokens: interrupted", o.tokens);
    if (o.reason != "length") return "";
    const int64_t capacity = engine_->kv_capacity();
    const int n_ctx = lm_.model->config().n_ctx_train;
    std::string why;
    if (f_.max_tokens >= 0 && o.tokens >= f_.max_tokens)
      why = fmt::format("the --max-tokens limit ({})", f_.max_tokens);
    else if (static_cast<int64_t>(n_prompt) + o.tokens < capacity)
      why = "the KV pool is full (raise --kv-pool)";
    else if (n_ctx > 0 && capacity < n_ctx)
      why = fmt::format("the KV capacity of {} tokens is full (raise -c/--ctx-size, up to the model's {})",
                        capacity, n_ctx);
    else
      why = fmt::format("the model's context of {} tokens is full", capacity);
    return fmt::format("stopped after {} tokens: {}", o.tokens, why);
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
  bool interactive_;
  SamplingParams sampling_;  // the flags', with the seed drawn when none was given
  SpecSetup spec_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<const grammar::CompiledGrammar> grammar_;
  std::shared_ptr<const LoraAdapter> lora_;  // --lora, for every request
};

constexpr const char* kChatHelp =
    "commands: /clear starts a new conversation, /bye quits; end a line with \\ to continue on the next";

// Interactive chat with the model's own template. The conversation is re-rendered every turn;
// the prefix cache keeps what the previous turns computed.
void chat_loop(LoadedModel& lm, const RunFlags& f) {
  RunSession runner(lm, f, /*chat=*/true, /*interactive=*/true);
  const chat::ChatPrompt prompt(*lm.tokenizer);
  auto fresh = [&f] {
    nlohmann::json m = nlohmann::json::array();
    if (!f.system.empty()) m.push_back({{"role", "system"}, {"content", f.system}});
    return m;
  };
  nlohmann::json messages = fresh();
  std::fprintf(stderr,
               "ferrum chat: type a message and press Enter (Ctrl-C stops an answer; Ctrl-D or /bye quits; "
               "/help)\n");
  const InterruptScope interrupts;
  while (std::optional<std::string> line = read_message("> ")) {
    if (line->empty()) continue;
    if (*line == "/bye" || *line == "/exit") break;
    if (*line == "/help" || *line == "/?") {
      std::fprintf(stderr, "%s\n", kChatHelp);
      continue;
    }
    if (*line == "/clear") {
      messages = fresh();
      std::fprintf(stderr, "(a new conversation)\n");
      continue;
    }
    messages.push_back({{"role", "user"}, {"content", *line}});
    Outcome reply;
    try {
      reply = runner.stream(prompt.tokens(messages, nullptr, nullptr), false);
    } catch (const Error& e) {  // the conversation outgrew the context
      std::fprintf(stderr, "ferrum: %s (a new conversation)\n", e.what());
      messages = fresh();
      continue;
    }
    messages.push_back({{"role", "assistant"}, {"content", reply.text}});
  }
}

// Interactive text continuation: each line is a prompt of its own.
void prompt_loop(LoadedModel& lm, const RunFlags& f) {
  RunSession runner(lm, f, /*chat=*/false, /*interactive=*/true);
  std::fprintf(stderr,
               "ferrum interactive mode: type a prompt and press Enter (empty line: free text; Ctrl-C stops "
               "an answer; Ctrl-D or /bye quits)\n");
  const InterruptScope interrupts;
  while (std::optional<std::string> line = read_message("> ")) {
    if (*line == "/bye" || *line == "/exit") break;
    std::vector<int32_t> ids = lm.tokenizer->encode(*line, true, false);
    if (ids.empty()) continue;
    try {
      runner.stream(ids, true);
    } catch (const Error& e) {
      std::fprintf(stderr, "ferrum: %s\n", e.what());
    }
  }
}

// `ferrum run "Once upon a time"` reads the text as the model path; say what to do instead.
void check_model_argument(const RunFlags& f) {
  const std::string& m = f.model.model;
  if (m.empty() || std::filesystem::exists(m)) return;
  if (f.prompt || !f.prompt_file.empty() || !f.prompt_arg.empty() || !f.model.model_flag.empty())
    fail("'{}': no such model file or directory", m);
  fail("'{}' is not a model file or directory; to give a prompt use -p TEXT (or `ferrum run MODEL TEXT`)", m);
}

void run_once(LoadedModel& lm, const RunFlags& f, const std::string& text) {
  const std::vector<int32_t> ids = lm.tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/false);
  if (ids.empty())
    fail(
        "the prompt encodes to no tokens and the model adds no BOS token to start from; give a non-empty "
        "prompt");
  RunSession session(lm, f, /*chat=*/false, /*interactive=*/false);
  const Outcome o = session.stream(ids, true);
  // A cut-short constrained output is not valid JSON / not in the grammar: a pipe must not take it.
  if (session.constrained() && o.reason == "length" && !f.allow_partial)
    fail("{}, so the output is incomplete for {} (raise -n, or pass --allow-partial to accept it)",
         session.ending(o, ids.size()), f.grammar_file.empty() ? "--json-schema" : "--grammar");
}

int run(RunFlags& f) {
  check_model_argument(f);
  // No prompt and a pipe on stdin: the piped text; an empty pipe generates from the start of a text
  // (a story for TinyStories).
  const std::optional<std::string> text = resolve_prompt(f);
  LoadedModel lm = f.model.load(f.model.options());
  if (text)
    run_once(lm, f, *text);
  else if (!lm.tokenizer->chat_template().empty() && !f.no_chat)
    chat_loop(lm, f);
  else
    prompt_loop(lm, f);
  if (profile::enabled()) std::fprintf(stderr, "%s", profile::format(profile::take(), "run").c_str());
  return 0;
}

}  // namespace

Runner add_run(CLI::App& app) {
  namespace sr = sampling_range;
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "generate text from a prompt, streaming it as it is produced");
  f->model.add(sub, true);
  sub->add_option("prompt", f->prompt_arg, "prompt text after the model (as -p)");
  f->spec.add(sub);
  f->model.add_lora(sub);
  f->model.add_pipeline(sub);
  sub->add_option("-p,--prompt", f->prompt,
                  "prompt text (none: stdin when piped, else an interactive session)");
  sub->add_option("-f,--file", f->prompt_file, "read the prompt from this file")->check(non_empty());
  sub->add_option("-n,--max-tokens,--n-predict", f->max_tokens,
                  "tokens to generate at most (-1: until the context is full)")
      ->transform(whole(-1, 1 << 30));
  sub->add_option("--temperature,--temp", f->sampling.temperature, "sampling temperature; 0 = greedy")
      ->check(real(sr::temperature));
  sub->add_option("--top-k", f->sampling.top_k, "keep the k most likely tokens (0 or -1 = off)")
      ->transform(whole(sr::top_k));
  sub->add_option("--top-p", f->sampling.top_p, "nucleus sampling threshold (1 = off)")
      ->check(real(sr::top_p, /*lo_open=*/true));
  sub->add_option("--min-p", f->sampling.min_p, "drop tokens below min-p times the top probability (0 = off)")
      ->check(real(sr::min_p));
  sub->add_option("--repeat-penalty", f->sampling.repeat_penalty, "repetition penalty (1 = off)")
      ->check(real(sr::repeat_penalty));
  sub->add_option("--presence-penalty", f->sampling.presence_penalty, "presence penalty (0 = off)")
      ->check(real(sr::presence_penalty));
  sub->add_option("--frequency-penalty", f->sampling.frequency_penalty, "frequency penalty (0 = off)")
      ->check(real(sr::frequency_penalty));
  sub->add_option("--penalty-last-n", f->sampling.penalty_last_n,
                  "tokens the penalties look back over (-1 = all)")
      ->transform(whole(sr::penalty_last_n));
  sub->add_option("-s,--seed", f->seed,
                  "random seed: the same seed gives the same output (-1: random; -v shows it)")
      ->check(seed_value())
      ->default_str("random");
  sub->add_flag("--ignore-eos", f->ignore_eos, "keep generating past end-of-generation tokens");
  sub->add_option("--stop", f->stop, "stop before this text (repeatable; the stop text is not printed)")
      ->check(non_empty());
  sub->add_flag("-v,--verbose", f->verbose, "print the seed and timing to stderr");
  sub->add_flag("--no-chat", f->no_chat,
                "interactive mode: plain text continuation even if the model has a chat template");
  sub->add_option("--system", f->system, "interactive chat: a system message");
  sub->add_option("--grammar", f->grammar_file, "constrain the output to this GBNF grammar (file)")
      ->check(non_empty());
  sub->add_option("--json-schema", f->schema_file, "constrain the output to JSON matching this schema (file)")
      ->check(non_empty());
  sub->add_flag("--allow-partial", f->allow_partial,
                "with --grammar/--json-schema: exit 0 even when the output stops before it is complete");
  return [f, sub] {
    f->layout_given = sub->count("--kv-layout") > 0;
    f->sampling.validate();
    return run(*f);
  };
}

}  // namespace ferrum::cli
