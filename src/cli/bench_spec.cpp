#include "cli/bench_spec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/fail.h"
#include "engine/engine.h"

namespace ferrum::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Text whose continuation tends to repeat what came before (prompt lookup's best case on a real
// model; any text works for a draft model).
constexpr const char* kDefaultPrompt =
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * "
    "b\n\n"
    "def div(a, b):\n    return a / b\n\ndef add(a, b):\n";

struct Run {
  double ts = 0;  // decode tokens/s: tokens after the first over the time after the first
  int tokens = 0;
  uint64_t proposed = 0, accepted = 0, verify_steps = 0;
  std::vector<int32_t> ids;
};

Run generate(Engine& eng, const std::vector<int32_t>& prompt, int n, bool speculative) {
  const EngineStats before = eng.stats();
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = n;
  p.sampling.temperature = 0;
  p.ignore_eos = true;
  p.speculative = speculative;
  auto h = eng.submit(std::move(p));
  Run r;
  Clock::time_point first{}, last{};
  while (true) {
    std::optional<RequestEvent> ev = h->next(std::chrono::milliseconds(1000));
    if (!ev) continue;
    const auto now = Clock::now();
    if (r.ids.empty() && !ev->tokens.empty()) first = now;
    r.ids.insert(r.ids.end(), ev->tokens.begin(), ev->tokens.end());
    last = now;
    if (!ev->finished) continue;
    if (ev->finish_reason == "error") fail("{}", ev->error);
    break;
  }
  r.tokens = static_cast<int>(r.ids.size());
  const double s = std::chrono::duration<double>(last - first).count();
  r.ts = r.tokens > 1 && s > 0 ? (r.tokens - 1) / s : 0;
  const EngineStats after = eng.stats();
  r.proposed = after.spec_proposed - before.spec_proposed;
  r.accepted = after.spec_accepted - before.spec_accepted;
  r.verify_steps = after.spec_verify_steps - before.spec_verify_steps;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int run_spec_bench(const ModelFlags& mf, const SpecFlags& sf, const SpecBenchFlags& f) {
  if (f.n_gen < 2) fail("-n must be at least 2 for a speculative benchmark (got {})", f.n_gen);
  if (f.reps < 1) fail("-r must be positive, got {}", f.reps);
  LoadedModel lm = load_model(mf.model_path(), mf.options(), mf.tokenizer);
  SpecSetup spec = make_spec(sf, mf, lm);
  const std::vector<int32_t> prompt =
      lm.tokenizer->encode(f.prompt.empty() ? kDefaultPrompt : f.prompt, true, false);
  EngineOptions eo;
  eo.kv = mf.kv_options();
  if (eo.kv.capacity == 0) eo.kv.capacity = static_cast<int64_t>(prompt.size()) + f.n_gen + 64;
  eo.max_num_seqs = 1;
  eo.max_waiting = 1;
  eo.spec = spec.options;
  Engine eng(*lm.model, *lm.tokenizer, eo);

  generate(eng, prompt, f.n_gen, false);  // warm-up of both paths
  generate(eng, prompt, f.n_gen, true);
  std::vector<double> plain_ts, spec_ts, ratios;
  Run last_spec;
  uint64_t proposed = 0, accepted = 0, steps = 0;
  bool same = true;
  for (int i = 0; i < f.reps; ++i) {  // alternated rounds
    const Run a = generate(eng, prompt, f.n_gen, false);
    const Run b = generate(eng, prompt, f.n_gen, true);
    plain_ts.push_back(a.ts);
    spec_ts.push_back(b.ts);
    ratios.push_back(b.ts / a.ts);
    proposed += b.proposed;
    accepted += b.accepted;
    steps += b.verify_steps;
    same = same && a.ids == b.ids;
    last_spec = b;
  }
  const double rate = proposed ? double(accepted) / proposed : 0;
  const double per_step = steps ? 1.0 + double(accepted) / steps : 0;
  if (f.json) {
    nlohmann::json j = {{"model", lm.path},
                        {"proposer", spec.options.proposer->name()},
                        {"draft_model", sf.draft_model},
                        {"draft_max", sf.draft_max},
                        {"adaptive", !sf.fixed},
                        {"n_prompt", prompt.size()},
                        {"n_gen", f.n_gen},
                        {"plain_ts", plain_ts},
                        {"spec_ts", spec_ts},
                        {"ratio_median", median(ratios)},
                        {"acceptance_rate", rate},
                        {"tokens_per_verify_step", per_step},
                        {"same_output", same}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf(
        "model:    %s\nproposer: %s%s, up to %d tokens per step%s\nprompt:   %zu tokens, %d generated "
        "(greedy), "
        "%d alternated rounds\n\n",
        lm.path.c_str(), spec.options.proposer->name().c_str(),
        sf.draft_model.empty() ? "" : (" " + sf.draft_model).c_str(), sf.draft_max,
        sf.fixed ? "" : " (adaptive)", prompt.size(), f.n_gen, f.reps);
    std::printf("| %-12s | %-40s |\n|--------------|------------------------------------------|\n", "decode",
                "tokens/s per round");
    auto row = [](const char* name, const std::vector<double>& v) {
      std::string s;
      for (double x : v) s += fmt::format("{:.2f} ", x);
      std::printf("| %-12s | %-40s |\n", name, s.c_str());
    };
    row("plain", plain_ts);
    row("speculative", spec_ts);
    std::printf(
        "\nspeed-up (median of rounds): %.2fx; acceptance %.1f%% (%llu of %llu proposed), %.2f tokens per "
        "verify step; same output: %s\n",
        median(ratios), 100 * rate, static_cast<unsigned long long>(accepted),
        static_cast<unsigned long long>(proposed), per_step, same ? "yes" : "NO");
  }
  if (!same) fail("speculative output differed from plain greedy output");
  return 0;
}

}  // namespace ferrum::cli
