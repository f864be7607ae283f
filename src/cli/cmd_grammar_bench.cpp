// `ferrum grammar-bench`: time of the constrained-decoding token mask per generated token, on a
// tokenizer's vocabulary (no weights needed). Random outputs are drawn token by token from the
// allowed set, so every state a real generation can reach is timed the way the engine uses it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "grammar/grammar_cache.h"
#include "loading/loader.h"

namespace ferrum::cli {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot read '{}'", path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Stats {
  double median, p99, mean;
};
Stats stats_of(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  const auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))]; };
  return {at(0.5), at(0.99), sum / us.size()};
}

}  // namespace

Runner add_grammar_bench(CLI::App& app) {
  struct Flags {
    std::string model, tokenizer, grammar, schema;
    bool json_object = false, json = false;
    int tokens = 128, samples = 8, warmup = 1;
    uint64_t seed = 1;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub =
      app.add_subcommand("grammar-bench", "time the grammar token mask per token (bench/README.md)");
  sub->add_option("model", f->model, "GGUF file (vocab-only is enough) or Hugging Face directory")
      ->required();
  sub->add_option("--tokenizer", f->tokenizer, "llama2.c tokenizer.bin");
  sub->add_option("--grammar", f->grammar, "GBNF file")->check(non_empty());
  sub->add_option("--json-schema", f->schema, "JSON Schema file")->check(non_empty());
  sub->add_flag("--json-object", f->json_object, "any JSON object");
  sub->add_option("-n,--tokens", f->tokens, "tokens per sample")->transform(whole(1, 100000));
  sub->add_option("--samples", f->samples, "random outputs drawn (timed)")->transform(whole(1, 10000));
  sub->add_option("--warmup", f->warmup, "random outputs drawn first, not timed (they fill the mask cache)")
      ->transform(whole(0, 10000));
  sub->add_option("--seed", f->seed, "random seed")->transform(whole(0, INT64_MAX));
  sub->add_flag("--json", f->json, "print the result as JSON");
  return [f] {
    grammar::GrammarSpec spec;
    if (!f->grammar.empty() + !f->schema.empty() + f->json_object != 1)
      fail("grammar-bench needs exactly one of --grammar, --json-schema, --json-object");
    if (!f->grammar.empty()) spec = {grammar::GrammarSpec::Kind::Gbnf, read_text(f->grammar)};
    if (!f->schema.empty()) spec = {grammar::GrammarSpec::Kind::JsonSchema, read_text(f->schema)};
    if (f->json_object) spec.kind = grammar::GrammarSpec::Kind::JsonObject;
    auto tok = load_tokenizer(f->model, f->tokenizer);
    grammar::GrammarCache cache(*tok);
    const auto t0 = std::chrono::steady_clock::now();
    auto g = cache.get(spec);
    const double compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const int n_vocab = tok->n_vocab();
    std::mt19937_64 rng(f->seed);
    std::vector<double> mask_us, walk;
    std::vector<uint64_t> bits, check;
    int64_t allowed_total = 0;
    size_t warm_entries = 0;
    for (int s = 0; s < f->warmup + f->samples; ++s) {
      if (s == f->warmup) warm_entries = g->masks->size();
      const bool timed = s >= f->warmup;
      grammar::TokenMask m(g, /*at_text_start=*/true);
      for (int t = 0; t < f->tokens && !m.done(); ++t) {
        using clock = std::chrono::steady_clock;
        auto a = clock::now();
        m.fill(bits, n_vocab);
        auto b = clock::now();
        m.compute_walk(check, n_vocab);
        auto c = clock::now();
        if (check != bits) fail("grammar-bench: the cached mask differs from the full walk at token {}", t);
        if (timed) {
          mask_us.push_back(std::chrono::duration<double, std::micro>(b - a).count());
          walk.push_back(std::chrono::duration<double, std::micro>(c - b).count());
        }
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < n_vocab; ++id)
          if (grammar::bit_set(bits, id) && !tok->is_eog(id)) allowed.push_back(id);
        if (timed) allowed_total += static_cast<int64_t>(allowed.size());
        if (allowed.empty()) break;
        const int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (!m.accept_token(id))
          fail("grammar-bench: the mask allowed token {} that the matcher rejects", id);
      }
    }
    const Stats wm = stats_of(mask_us), wk = stats_of(walk);
    const size_t entries = g->masks->size();
    if (f->json) {
      auto row = [](const Stats& st) {
        return nlohmann::json{{"median", st.median}, {"p99", st.p99}, {"mean", st.mean}};
      };
      nlohmann::json j = {
          {"n_vocab", n_vocab},       {"tokens", mask_us.size()},
          {"compile_ms", compile_ms}, {"mask_us", row(wm)},
          {"walk_us", row(wk)},       {"cache_entries_after_warmup", warm_entries},
          {"cache_entries", entries}, {"allowed_mean", double(allowed_total) / mask_us.size()}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf(
          "vocab %d, %zu timed tokens (%d samples after %d warm-up), grammar + vocabulary trie %.1f ms\n",
          n_vocab, mask_us.size(), f->samples, f->warmup, compile_ms);
      std::printf("mask (engine: mask cache)  median %8.1f us  p99 %8.1f us  mean %8.1f us\n", wm.median,
                  wm.p99, wm.mean);
      std::printf("full trie walk (no cache)  median %8.1f us  p99 %8.1f us  mean %8.1f us\n", wk.median,
                  wk.p99, wk.mean);
      std::printf(
          "mask-cache entries: %zu after warm-up, %zu at the end; allowed tokens per step: mean %.0f\n",
          warm_entries, entries, double(allowed_total) / mask_us.size());
    }
    return 0;
  };
}

}  // namespace ferrum::cli
