// `ferrum bench`: prompt-processing and generation speed measured the way llama-bench measures
// them (pp<N>: one N-token prefill; tg<N>: N single-token decode steps, with logits every step;
// both from an empty cache, or at depth D: after an untimed prefill of D tokens, as llama-bench's
// -d), so the two can be set side by side; plus batched decode throughput (--batch M: M
// sequences advancing together) and decode speed against the memory roofline.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/bench_spec.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/format_bytes.h"
#include "cli/membw.h"
#include "core/fail.h"
#include "core/profile.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "loading/loader.h"

namespace ferrum::cli {
namespace {

struct BenchFlags {
  ModelFlags model;
  SpecFlags spec;
  std::string spec_prompt;
  int n_prompt = 512, n_gen = 128, reps = 5;
  std::vector<int> batch;
  std::vector<int> depth = {0};
  int ubatch = 0;
  bool json = false, roofline = false, no_warmup = false, profile = false;
  double bandwidth = 0;
  uint32_t seed = 1234;
  std::vector<std::string> lora_each;  // distinct adapters, sequence b uses the (b mod k)-th
};

struct Result {
  Result(std::string n, int p, int g, int m, int d)
      : name(d > 0 ? fmt::format("{} @ d{}", n, d) : std::move(n)),
        n_prompt(p),
        n_gen(g),
        batch(m),
        depth(d) {}
  std::string name;
  int n_prompt = 0, n_gen = 0, batch = 1, depth = 0;
  std::vector<double> ts;  // tokens/s of each repetition
  std::string profile;     // --profile: where the timed repetitions' time went
  double mean = 0, sd = 0;
  void finish() {
    double s = 0;
    for (double v : ts) s += v;
    mean = s / ts.size();
    double q = 0;
    for (double v : ts) q += (v - mean) * (v - mean);
    sd = ts.size() > 1 ? std::sqrt(q / (ts.size() - 1)) : 0.0;  // sample stddev, as llama-bench
  }
};

// What a decode step reads: every weight except the embedding table (one row of it), unless the
// output matrix is tied to it.
struct WeightInfo {
  std::string file_type;
  int64_t params = 0;
  size_t total_bytes = 0, per_token_bytes = 0;
  std::map<std::string, size_t> bytes_by_type;
};

// llama_ftype values as written in general.file_type (llama.cpp include/llama.h).
std::string ftype_name(uint64_t v) {
  static const std::map<uint64_t, const char*> names = {
      {0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},    {8, "Q5_0"},
      {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"}, {14, "Q4_K_S"},
      {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"},   {32, "BF16"}};
  auto it = names.find(v);
  return it != names.end() ? it->second : fmt::format("ftype {}", v);
}

WeightInfo weight_info(const ModelFlags& mf) {
  ModelFiles files = open_model_files(mf.model_path(), mf.tokenizer);
  WeightInfo w;
  const bool tied = files.weights.find("output.weight") == nullptr;
  size_t matrix_bytes = 0;
  std::string main_type;
  for (const auto& [name, t] : files.weights.all()) {
    w.params += t.n_elements();
    w.total_bytes += t.nbytes;
    w.bytes_by_type[dtype_name(t.type)] += t.nbytes;
    if (name == "token_embd.weight" && !tied) {
      w.per_token_bytes += t.nbytes / std::max<int64_t>(1, t.rows());
    } else {
      w.per_token_bytes += t.nbytes;
    }
    if (t.n_dims >= 2 && t.nbytes > matrix_bytes) matrix_bytes = t.nbytes, main_type = dtype_name(t.type);
  }
  if (files.gguf)
    if (auto ft = files.gguf->find_uint("general.file_type")) w.file_type = ftype_name(*ft);
  if (w.file_type.empty()) w.file_type = main_type;
  return w;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Bench {
 public:
  // lora: the adapters sequences use in turn (sequence b: lora[b mod size]); empty for none.
  Bench(Model& m, KvCache& kv, const Tokenizer& tok, uint32_t seed, std::vector<const LoraAdapter*> lora)
      : m_(m), kv_(kv), rng_(seed), vocab_(m.config().n_vocab), lora_(std::move(lora)) {
    bos_ = tok.bos_id() >= 0 && tok.bos_id() < vocab_ ? tok.bos_id() : -1;
  }

  // llama-bench's test_prompt: one batch of n tokens (BOS, then random ids), logits of the last;
  // at depth d, after d such tokens already in the cache.
  double prompt(int n, int depth) {
    fill_depth(0, depth);
    std::vector<int32_t> toks(n);
    for (int i = 0; i < n; ++i) toks[i] = i == 0 && depth == 0 && bos_ >= 0 ? bos_ : random_token();
    logits_.resize(vocab_);
    const auto t0 = std::chrono::steady_clock::now();
    m_.prefill(kv_, 0, toks, logits_.data(), false, lora_of(0));
    const double s = seconds_since(t0);
    kv_.reset();
    return n / s;
  }

  // llama-bench's test_gen, for `batch` sequences at once: n steps of one token per sequence
  // from an empty cache (or d tokens deep), logits every step. Returns tokens/s summed over the
  // sequences.
  double generate(int n, int batch, int depth) {
    tokens_.resize(batch);
    items_.resize(batch);
    logits_.resize(static_cast<size_t>(batch) * vocab_);
    kv_.reset();
    for (int b = 0; b < batch; ++b) {
      fill_depth(b, depth, /*reset=*/false);
      kv_.reserve(b, depth + n);  // cache room is not part of the timing
      tokens_[b] = depth == 0 && bos_ >= 0 ? bos_ : random_token();
      items_[b] = SeqInput{};
      items_[b].seq = b;
      items_[b].tokens = std::span(&tokens_[b], 1);
      items_[b].lora = lora_of(b);
    }
    // Over pipeline stages the sequences go in groups with a pass in flight each, as the engine's
    // passes do, so that every stage works at once; otherwise one pass of all of them.
    const int groups = std::clamp(m_.max_passes_in_flight(), 1, batch);
    std::vector<uint64_t> pass(groups, 0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i <= n; ++i)
      for (int g = 0; g < groups; ++g) {
        const int b0 = batch * g / groups, b1 = batch * (g + 1) / groups;
        if (i > 0) {
          m_.end_forward(pass[g]);
          for (int b = b0; b < b1; ++b) tokens_[b] = random_token();
        }
        if (i < n)
          pass[g] = m_.begin_forward(kv_, std::span<const SeqInput>(items_).subspan(b0, b1 - b0),
                                     ForwardOut{logits_.data() + static_cast<size_t>(b0) * vocab_, nullptr});
      }
    const double s = seconds_since(t0);
    kv_.reset();
    return static_cast<double>(n) * batch / s;
  }

 private:
  // Untimed: sequence `seq` holds `depth` tokens (BOS, then random ids) afterwards.
  void fill_depth(int seq, int depth, bool reset = true) {
    if (reset) kv_.reset();
    if (depth == 0) return;
    std::vector<int32_t> toks(depth);
    for (int i = 0; i < depth; ++i) toks[i] = i == 0 && bos_ >= 0 ? bos_ : random_token();
    m_.prefill(kv_, seq, toks, nullptr, false, lora_of(seq));
  }
  const LoraAdapter* lora_of(int seq) const { return lora_.empty() ? nullptr : lora_[seq % lora_.size()]; }
  int32_t random_token() { return static_cast<int32_t>(rng_() % static_cast<uint32_t>(vocab_)); }

  Model& m_;
  KvCache& kv_;
  std::mt19937 rng_;
  int vocab_;
  int32_t bos_ = -1;
  std::vector<float> logits_;
  std::vector<int32_t> tokens_;
  std::vector<SeqInput> items_;
  std::vector<const LoraAdapter*> lora_;
};

int run_bench(BenchFlags& f) {
  if (f.spec.enabled()) return run_spec_bench(f.model, f.spec, {f.n_gen, f.reps, f.spec_prompt, f.json});
  if (f.n_prompt < 0 || f.n_gen < 0)
    fail("-p and -n must not be negative (got {} and {})", f.n_prompt, f.n_gen);
  if (f.n_prompt == 0 && f.n_gen == 0) fail("nothing to measure: -p and -n are both 0");
  if (f.reps <= 0) fail("-r must be positive, got {}", f.reps);
  for (int m : f.batch)
    if (m <= 0) fail("--batch must be positive, got {}", m);
  if (!f.batch.empty() && f.n_gen == 0) fail("--batch needs -n > 0 (the decode steps to measure)");
  if (f.ubatch < 0) fail("--ubatch must be positive, got {}", f.ubatch);
  if (f.depth.empty()) f.depth = {0};
  for (int d : f.depth)
    if (d < 0) fail("-d must not be negative, got {}", d);
  const int max_d = *std::max_element(f.depth.begin(), f.depth.end());

  ModelOptions opts = f.model.options();
  KvOptions kvo = f.model.kv_options();
  const int max_m = f.batch.empty() ? 1 : *std::max_element(f.batch.begin(), f.batch.end());
  // Like llama-bench's n_ctx = depth + n_prompt + n_gen per test: room for the longest test only.
  if (kvo.capacity == 0) kvo.capacity = max_d + std::max({f.n_prompt, f.n_gen, 16});
  // The pool (both layouts) must hold the largest batch of whole sequences (at depth, no more:
  // deep sequences are large).
  if (kvo.pool_tokens == 0) {
    const int64_t cap16 = (kvo.capacity + 15) / 16 * 16;
    kvo.pool_tokens = std::max<int64_t>(max_d > 0 ? 1 : 4, max_m) * cap16;
  }
  if (f.ubatch > 0) opts.max_batch = f.ubatch;
  const std::string path = f.model.model_path();
  const WeightInfo wi = weight_info(f.model);
  const auto t_load = std::chrono::steady_clock::now();
  LoadedModel lm = f.model.load(opts);
  const double load_s = seconds_since(t_load);
  Model& model = *lm.model;
  const ModelConfig& c = model.config();
  const int threads = opts.n_threads > 0 ? opts.n_threads : ThreadPool::default_threads();

  std::unique_ptr<KvCache> cache = KvCache::for_model(model, kvo);
  // --lora: one (summed) adapter for every sequence; --lora-each: k adapters taken in turn.
  if (!f.model.lora.empty() && !f.lora_each.empty()) fail("--lora and --lora-each cannot be combined");
  std::vector<std::shared_ptr<const LoraAdapter>> adapters;
  if (auto a = f.model.load_adapter(model)) adapters.push_back(a);
  for (const std::string& s : f.lora_each) {
    const LoraSpec spec = parse_lora_spec(s);
    adapters.push_back(load_lora(model, std::span(&spec, 1)));
  }
  std::vector<const LoraAdapter*> lora;
  size_t lora_mem = 0;
  for (const auto& a : adapters) lora.push_back(a.get()), lora_mem += lora_bytes(*a);
  Bench bench(model, *cache, *lm.tokenizer, f.seed, lora);
  std::vector<Result> results;
  auto measure = [&](Result r, auto&& once) {
    if (!f.no_warmup) once();  // warm-up, as llama-bench
    if (f.profile) profile::enable(true);
    for (int i = 0; i < f.reps; ++i) r.ts.push_back(once());
    if (f.profile) {
      r.profile = profile::format(profile::take(), r.name);
      profile::enable(false);
    }
    r.finish();
    results.push_back(std::move(r));
  };
  for (int d : f.depth) {
    if (f.n_prompt > 0)
      measure(Result{fmt::format("pp{}", f.n_prompt), f.n_prompt, 0, 1, d},
              [&] { return bench.prompt(f.n_prompt, d); });
    if (f.n_gen == 0) continue;
    // llama-bench warms generation up with a single token; a full run costs little more here.
    measure(Result{fmt::format("tg{}", f.n_gen), 0, f.n_gen, 1, d},
            [&] { return bench.generate(f.n_gen, 1, d); });
    for (int m : f.batch) {
      if (m == 1) continue;
      measure(Result{fmt::format("tg{} x{}", f.n_gen, m), 0, f.n_gen, m, d},
              [&] { return bench.generate(f.n_gen, m, d); });
    }
  }
  // KV memory with the largest batch resident.
  for (int b = 0; b < max_m; ++b) cache->reserve(b, std::max(1, f.n_gen));
  const KvUsage kv = cache->usage();
  cache->reset();

  Bandwidth bw;
  if (f.bandwidth > 0) {
    bw.gb_per_s = bw.mean_gb_per_s = f.bandwidth;
  } else if (f.roofline) {
    bw = measure_read_bandwidth(threads);
  }
  // The M=1 generation row at a depth (the batched rows' baseline); the roofline uses the first.
  auto tg1_at = [&](int depth) -> const Result* {
    for (const Result& r : results)
      if (r.n_gen > 0 && r.batch == 1 && r.depth == depth) return &r;
    return nullptr;
  };
  const Result* tg1 = tg1_at(f.depth.front());
  const double roof_ts = bw.gb_per_s > 0 ? bw.gb_per_s * 1e9 / wi.per_token_bytes : 0;

  nlohmann::json j;
  j["model"] = {{"path", path},
                {"architecture", arch_name(c.arch)},
                {"name", c.name},
                {"file_type", wi.file_type},
                {"n_params", wi.params},
                {"weight_bytes", wi.total_bytes},
                {"weight_bytes_per_token", wi.per_token_bytes},
                {"bytes_by_type", wi.bytes_by_type},
                {"n_layer", c.n_layer},
                {"n_embd", c.n_embd},
                {"n_vocab", c.n_vocab}};
  j["setup"] = {{"threads", threads},       {"isa", kernels::active_isa()}, {"precision", f.model.precision},
                {"ubatch", opts.max_batch}, {"repetitions", f.reps},        {"warmup", !f.no_warmup},
                {"load_seconds", load_s}};
  for (const auto& a : adapters) j["lora"].push_back({{"name", lora_name(*a)}, {"bytes", lora_bytes(*a)}});
  j["kv"] = {{"layout", kv_layout_name(kvo.layout)}, {"type", kv_type_name(*cache->options().type)},
             {"capacity", kv.seq_capacity},          {"bytes_per_token", kv.bytes_per_token},
             {"pool_bytes", kv.pool_bytes},          {"pool_blocks", kv.total_blocks},
             {"block_tokens", kv.block_tokens},      {"peak_held_bytes", kv.peak_held_bytes},
             {"window_layers", kv.window_layers},    {"window_rows", kv.window_rows}};
  for (const Result& r : results) {
    nlohmann::json e = {{"test", r.name},    {"n_prompt", r.n_prompt}, {"n_gen", r.n_gen},
                        {"batch", r.batch},  {"n_depth", r.depth},     {"avg_ts", r.mean},
                        {"stddev_ts", r.sd}, {"samples_ts", r.ts}};
    if (const Result* base = tg1_at(r.depth); r.batch > 1 && base) e["ratio_to_batch1"] = r.mean / base->mean;
    if (r.n_gen > 0 && r.batch == 1 && roof_ts > 0) e["roofline_fraction"] = r.mean / roof_ts;
    if (f.profile) e["profile"] = r.profile;
    j["results"].push_back(e);
  }
  if (bw.gb_per_s > 0)
    j["roofline"] = {{"read_bandwidth_gbs", bw.gb_per_s},
                     {"read_bandwidth_mean_gbs", bw.mean_gb_per_s},
                     {"measured", f.bandwidth <= 0},
                     {"max_decode_ts", roof_ts}};
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  std::printf("model:   %s\n", path.c_str());
  std::printf("         %s '%s', %d layers, hidden %d, vocab %d; type %s, %.2f B params, weights %s (",
              arch_name(c.arch), c.name.c_str(), c.n_layer, c.n_embd, c.n_vocab, wi.file_type.c_str(),
              wi.params / 1e9, human_bytes(wi.total_bytes).c_str());
  bool first = true;
  for (const auto& [type, b] : wi.bytes_by_type)
    std::printf("%s%s %s", first ? "" : ", ", type.c_str(), human_bytes(b).c_str()), first = false;
  std::printf(")\n");
  std::printf("setup:   %d threads, isa %s, precision %s, ubatch %lld, %d repetitions (%s), load %.2f s\n",
              threads, kernels::active_isa(), f.model.precision.c_str(),
              static_cast<long long>(opts.max_batch), f.reps, f.no_warmup ? "no warm-up" : "+1 warm-up",
              load_s);
  if (!adapters.empty())
    std::printf("lora:    %zu adapter%s (sequence b uses adapter b mod %zu): %s\n", adapters.size(),
                adapters.size() > 1 ? "s" : "", adapters.size(), human_bytes(lora_mem).c_str());
  std::printf("kv:      %s %s, %lld tokens/sequence, %zu bytes/token, pool %s, held at most %s\n",
              kv_layout_name(kvo.layout), kv_type_name(*cache->options().type),
              static_cast<long long>(kv.seq_capacity), kv.bytes_per_token, human_bytes(kv.pool_bytes).c_str(),
              human_bytes(kv.peak_held_bytes).c_str());
  if (kv.window_layers > 0)
    std::printf("         %lld of %d layers windowed: each keeps at most %lld positions of a sequence\n",
                static_cast<long long>(kv.window_layers), c.n_layer, static_cast<long long>(kv.window_rows));
  std::printf("\n| %-20s | %22s | %10s | %8s |\n", "test", "tokens/s (mean ± sd)", "ms/token", "vs M=1");
  std::printf("|%s|%s|%s|%s|\n", std::string(22, '-').c_str(), std::string(24, '-').c_str(),
              std::string(12, '-').c_str(), std::string(10, '-').c_str());
  for (const Result& r : results) {
    const Result* base = tg1_at(r.depth);
    const std::string ratio = r.batch > 1 && base ? fmt::format("{:.2f}x", r.mean / base->mean) : "";
    std::printf("| %-20s | %13.2f ± %6.2f | %10.2f | %8s |\n", r.name.c_str(), r.mean, r.sd, 1000.0 / r.mean,
                ratio.c_str());
  }
  if (bw.gb_per_s > 0) {
    std::printf(
        "\nroofline: read bandwidth %.1f GB/s (%s); a decode step reads %.3f GB of weights -> at most %.1f "
        "tokens/s\n",
        bw.gb_per_s,
        f.bandwidth > 0 ? "given"
                        : fmt::format("best of {} passes over {}, {} threads", bw.passes,
                                      human_bytes(bw.bytes), bw.threads)
                              .c_str(),
        wi.per_token_bytes / 1e9, roof_ts);
    if (tg1)
      std::printf("          %s = %.1f%% of the roofline\n", tg1->name.c_str(), 100.0 * tg1->mean / roof_ts);
  }
  for (const Result& r : results) std::printf("%s", r.profile.c_str());
  return 0;
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench", "measure prompt processing (pp) and generation (tg) speed in tokens/s, as llama-bench does");
  f->model.add(sub, true);
  f->model.add_lora(sub);
  f->model.add_pipeline(sub);
  sub->add_option(
      "--lora-each", f->lora_each,
      "LoRA adapter PATH[:scale] of its own per sequence (repeatable: sequence b uses the (b mod k)-th; "
      "pp uses the first)");
  sub->add_option("-p,--n-prompt", f->n_prompt, "prompt tokens processed in one prefill (0 = skip)")
      ->transform(whole(0, 1 << 20));
  sub->add_option("-n,--n-gen", f->n_gen, "tokens generated one at a time from an empty cache (0 = skip)")
      ->transform(whole(0, 1 << 20));
  sub->add_option("-r,--repetitions", f->reps, "repetitions of each test (after one warm-up)")
      ->transform(whole(1, 100000));
  sub->add_option("--batch", f->batch,
                  "also measure decode with M sequences advancing together (e.g. --batch 4,16)")
      ->delimiter(',')
      ->transform(whole(1, 4096));
  sub->add_option(
         "-d,--n-depth", f->depth,
         "run every test at these depths: tokens already in the cache, prefilled untimed (e.g. -d 0,4096)")
      ->delimiter(',')
      ->transform(whole(0, 1 << 24));
  sub->add_option("--ubatch", f->ubatch, "tokens per forward pass of a prefill")
      ->transform(whole(1, 1 << 20))
      ->default_str("the engine's");
  sub->add_flag("--roofline", f->roofline, "measure memory read bandwidth and state decode speed against it");
  sub->add_option("--bandwidth", f->bandwidth,
                  "memory read bandwidth in GB/s for the roofline (skips measuring)")
      ->check(real(0, 1e6, /*lo_open=*/true))
      ->default_str("measured");
  sub->add_option("--seed", f->seed, "seed of the random token ids")->transform(whole(0, UINT32_MAX));
  sub->add_flag("--json", f->json, "print JSON");
  sub->add_flag("--profile", f->profile,
                "time per op kind (matmul by weight type and shape, attention, norms, RoPE, KV writes, "
                "sampling, thread-pool waits) and per layer, per forward pass of each test");
  sub->add_flag(
      "--no-warmup", f->no_warmup,
      "skip the warm-up run of each test (as llama-bench's; saves the depth prefill at long contexts)");
  f->spec.add(sub);
  sub->add_option(
      "--spec-prompt", f->spec_prompt,
      "with --draft-model/--spec-ngram: the prompt of the greedy generations compared (default: a "
      "text that repeats itself)");
  return [f] { return run_bench(*f); };
}

}  // namespace ferrum::cli
