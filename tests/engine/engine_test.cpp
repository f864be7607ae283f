// Continuous-batching engine: outputs through the scheduler equal single-sequence generate(),
// no mix-ups between concurrent requests, preemption under a tiny KV pool, stop strings,
// cancellation, busy and context-length answers.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "engine/stop.h"
#include "greedy_reference.h"
#include "loading/loader.h"
#include "test_util.h"

namespace ferrum::engine_test {
namespace {

using namespace std::chrono_literals;

std::string stories() {
  return std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf";
}
std::string qwen3() {
  return test::data_path("models/qwen3/gguf/qwen3-Q8_0.gguf");
}

// A model with the KV cache options its engine (or reference run) uses.
struct Loaded : LoadedModel {
  KvOptions kv;
  EngineOptions engine_options() const {
    EngineOptions e;
    e.kv = kv;
    return e;
  }
};

Loaded load(const std::string& path, const std::string& layout = "paged", int64_t pool = 0,
            int64_t capacity = 512, bool prefix_cache = false) {
  ModelOptions o;
  o.n_threads = 2;
  Loaded l;
  static_cast<LoadedModel&>(l) = load_model(path, o);
  l.kv.layout = parse_kv_layout(layout);
  l.kv.capacity = capacity;
  l.kv.pool_tokens = pool;
  l.kv.prefix_cache = prefix_cache;
  return l;
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0;
  return p;
}

struct Output {
  std::vector<int32_t> tokens;
  std::string text, finish_reason;
  int prompt_tokens = 0, completion_tokens = 0;
};

Output collect(RequestHandle& h) {
  Output o;
  for (int i = 0; i < 6000; ++i) {  // bounded: 600 s at most
    auto e = h.next(100ms);
    if (!e) continue;
    o.tokens.insert(o.tokens.end(), e->tokens.begin(), e->tokens.end());
    o.text += e->text;
    if (e->finished) {
      o.finish_reason = e->finish_reason;
      o.prompt_tokens = e->prompt_tokens;
      o.completion_tokens = e->completion_tokens;
      return o;
    }
  }
  ADD_FAILURE() << "request did not finish";
  return o;
}

// Single-sequence reference with the plain generation loop.
Output reference(Loaded& lm, const std::vector<int32_t>& prompt, int max_tokens) {
  const test::GreedyRun r = test::greedy_reference(*lm.model, lm.kv, *lm.tokenizer, prompt, max_tokens);
  Output o;
  o.tokens = r.tokens;
  o.finish_reason = r.finish_reason;
  o.text = r.text;
  return o;
}

RequestParams req(const std::vector<int32_t>& prompt, int max_tokens) {
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = max_tokens;
  p.sampling = greedy();
  p.at_text_start = false;
  return p;
}

TEST(StopMatcher, MatchesAcrossPiecesAndHoldsBackPrefixes) {
  StopMatcher m({"END", "xyz"});
  EXPECT_EQ(m.push("hello E"), "hello ");  // "E" may start "END"
  EXPECT_EQ(m.push("N"), "");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("D tail"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more"), "");

  StopMatcher n({"END"});
  EXPECT_EQ(n.push("EN"), "");
  EXPECT_EQ(n.push("X"), "ENX");  // the partial match broke: released
  EXPECT_EQ(n.push("abcE"), "abc");
  EXPECT_EQ(n.flush(), "E");  // generation ended with a partial match: emitted
  StopMatcher none;
  EXPECT_EQ(none.push("abc"), "abc");
}

TEST(Scheduler, GreedyEqualsGenerate) {
  Loaded ref = load(stories(), "contiguous");
  Loaded lm = load(stories());
  const auto prompt = lm.tokenizer->encode("Once upon a time", true, false);
  const Output want = reference(ref, prompt, 60);
  Engine eng(*lm.model, *lm.tokenizer, lm.engine_options());
  Output got = collect(*eng.submit(req(prompt, 60)));
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.text, want.text);
  EXPECT_EQ(got.finish_reason, want.finish_reason);
  EXPECT_EQ(got.prompt_tokens, static_cast<int>(prompt.size()));
  EXPECT_EQ(got.completion_tokens, static_cast<int>(want.tokens.size()));
  EXPECT_FALSE(got.text.empty());
}

// A model that says it keeps `depth` passes in flight (as a pipeline does) and checks how the
// engine uses them: the passes in flight at once, and that no sequence is in two of them.
class PassRecorder : public Model {
 public:
  PassRecorder(Model& m, int depth) : m_(m), depth_(depth) {}
  const ModelConfig& config() const override { return m_.config(); }
  const ModelOptions& options() const override { return m_.options(); }
  void forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override {
    m_.forward(kv, batch, out);
  }
  void embed_tokens(std::span<const int32_t> ids, float* rows) const override { m_.embed_tokens(ids, rows); }
  size_t weight_bytes() const override { return m_.weight_bytes(); }
  ModelStats stats() const override { return m_.stats(); }
  int max_passes_in_flight() const override { return depth_; }
  uint64_t begin_forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override {
    for (const SeqInput& it : batch)
      for (const auto& [pass, seqs] : flying_)
        for (int s : seqs)
          EXPECT_NE(s, it.seq) << "sequence " << s << " in passes " << pass << " and " << next_;
    m_.forward(kv, batch, out);
    auto& seqs = flying_[next_];
    for (const SeqInput& it : batch) seqs.push_back(it.seq);
    most_ = std::max(most_, flying_.size());
    return next_++;
  }
  void end_forward(uint64_t pass) override {
    ASSERT_FALSE(flying_.empty());
    EXPECT_EQ(pass, flying_.begin()->first) << "passes end oldest first";
    flying_.erase(pass);
  }
  size_t most_in_flight() const { return most_; }

 private:
  Model& m_;
  int depth_;
  std::map<uint64_t, std::vector<int>> flying_;
  uint64_t next_ = 1;
  size_t most_ = 0;
};

// Many requests at once, each must get exactly its own single-request output; with passes in
// flight (`passes` > 1, as over pipeline stages) as well.
void concurrent_no_mixups(const std::string& path, int64_t pool, int max_num_seqs, int budget,
                          bool expect_preempt, int passes = 1) {
  Loaded ref = load(path, "contiguous");
  Loaded lm = load(path, "paged", pool);
  const std::vector<std::string> texts = {
      "Once upon a time",   "The cat",     "Lily and Tom went to the park", "One day, a little bird",
      "Sam had a red ball", "The sun was", "There was a big dog named Max", "Mom said"};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Output> want;
  for (const auto& t : texts) {
    prompts.push_back(lm.tokenizer->encode(t, true, false));
    want.push_back(reference(ref, prompts.back(), 48));
  }
  EngineOptions eo = lm.engine_options();
  eo.max_num_seqs = max_num_seqs;
  eo.max_batched_tokens = budget;
  PassRecorder model(*lm.model, passes);
  Engine eng(model, *lm.tokenizer, eo);
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (const auto& p : prompts) hs.push_back(eng.submit(req(p, 48)));
  for (size_t i = 0; i < hs.size(); ++i) {
    Output got = collect(*hs[i]);
    EXPECT_EQ(got.tokens, want[i].tokens) << "request " << i << " '" << texts[i] << "'";
    EXPECT_EQ(got.text, want[i].text) << "request " << i;
  }
  const EngineStats st = eng.stats();
  EXPECT_EQ(st.requests_finished, texts.size());
  if (expect_preempt) EXPECT_GT(st.preemptions, 0u);
  EXPECT_LT(st.steps, 8u * 49u);  // batched: far fewer steps than one request at a time
  EXPECT_EQ(eng.kv_usage().sequences, 0);
  EXPECT_EQ(model.most_in_flight(), static_cast<size_t>(passes));
}

// Unless sized by the caller, the engine's pool holds max_num_seqs full-length sequences (the
// library's default, 4, would preempt a full batch of long ones); a given size is kept.
TEST(Scheduler, DefaultPoolHoldsMaxNumSeqsFullSequences) {
  Loaded m = load(stories(), "paged", /*pool=*/0, /*capacity=*/128);
  EngineOptions e = m.engine_options();
  e.max_num_seqs = 12;
  {
    Engine eng(*m.model, *m.tokenizer, e);
    const KvUsage u = eng.kv_usage();
    EXPECT_GE(u.total_blocks * u.block_tokens, 12 * 128);
    EXPECT_LT(u.total_blocks * u.block_tokens, 13 * 128);
  }
  e.kv.pool_tokens = 256;
  Engine sized(*m.model, *m.tokenizer, e);
  EXPECT_EQ(sized.kv_usage().total_blocks * sized.kv_usage().block_tokens, 256);
  // The library's own default stays 4 sequences.
  auto alone = KvCache::for_model(*m.model, m.kv);
  EXPECT_EQ(alone->usage().total_blocks * alone->usage().block_tokens, 4 * 128);
}

TEST(Scheduler, ConcurrentRequestsGetTheirOwnOutputStories) {
  concurrent_no_mixups(stories(), 0, 8, 64, false);
}
TEST(Scheduler, ConcurrentRequestsGetTheirOwnOutputQwen3) {
  concurrent_no_mixups(qwen3(), 0, 4, 16, false);
}
// 8 x (prompt + 48) tokens need ~8 x 4 blocks of 16; a pool of 96 tokens (6 blocks) forces
// deferral and preemption, and every request must still complete with the same output.
TEST(Scheduler, PreemptionUnderTinyPoolCompletesEveryRequest) {
  concurrent_no_mixups(stories(), 96, 8, 32, true);
}
// Passes in flight, each over other sequences (over pipeline stages every stage works at once):
// the same outputs, with prompts chunked, and when the pool runs out while passes are in flight.
TEST(Scheduler, PassesInFlightGiveTheSameOutputs) {
  concurrent_no_mixups(stories(), 0, 8, 64, false, 2);
  concurrent_no_mixups(stories(), 0, 8, 16, false, 3);
  concurrent_no_mixups(stories(), 96, 8, 32, true, 2);
}

TEST(Scheduler, StopStringAcrossTokenBoundaryIsNotEmitted) {
  Loaded ref = load(stories(), "contiguous");
  Loaded lm = load(stories());
  const auto prompt = lm.tokenizer->encode("Once upon a time", true, false);
  const Output want = reference(ref, prompt, 60);
  // A stop string from the middle of one token's text into the next one's.
  StreamDecoder dec(*lm.tokenizer, true, false);
  std::string text;
  size_t boundary = 0;
  for (size_t i = 0; i < 12; ++i) {
    text += dec.push(want.tokens[i]);
    if (i == 9) boundary = text.size();
  }
  ASSERT_GT(boundary, 2u);
  ASSERT_GT(text.size(), boundary + 2);
  const std::string stop = text.substr(boundary - 2, 4);
  const size_t first = want.text.find(stop);
  Engine eng(*lm.model, *lm.tokenizer, lm.engine_options());
  RequestParams p = req(prompt, 60);
  p.stop = {"never-appears-zzz", stop};
  Output got = collect(*eng.submit(p));
  EXPECT_EQ(got.finish_reason, "stop");
  EXPECT_EQ(got.text, want.text.substr(0, first)) << "stop '" << stop << "'";
}

// Passes in flight: a request cancelled while its pass flies ends after that pass (its cache is
// not freed under it), the others keep their own outputs, and every cache sequence is freed.
TEST(Scheduler, CancelWithPassesInFlight) {
  Loaded ref = load(stories(), "contiguous");
  Loaded lm = load(stories());
  const std::vector<std::string> texts = {"Once upon a time", "The cat", "Lily and Tom went to the park",
                                          "Mom said"};
  PassRecorder model(*lm.model, 2);
  Engine eng(model, *lm.tokenizer, lm.engine_options());
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Output> want;
  for (const auto& t : texts) {
    prompts.push_back(lm.tokenizer->encode(t, true, false));
    want.push_back(reference(ref, prompts.back(), 40));
  }
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (const auto& p : prompts) hs.push_back(eng.submit(req(p, 40)));
  ASSERT_TRUE(hs[1]->next(60s).has_value());  // decoding: its passes are in flight from now on
  hs[1]->cancel();
  for (size_t i = 0; i < hs.size(); ++i) {
    if (i == 1) continue;
    const Output got = collect(*hs[i]);
    EXPECT_EQ(got.tokens, want[i].tokens) << "request " << i;
  }
  std::string reason;
  for (int i = 0; i < 600 && reason.empty(); ++i)
    if (auto e = hs[1]->next(100ms); e && e->finished) reason = e->finish_reason;
  EXPECT_TRUE(reason == "cancelled" || reason == "length") << reason;  // the tiny model may finish first
  eng.shutdown(true);
  EXPECT_EQ(eng.kv_usage().sequences, 0);
  EXPECT_EQ(model.most_in_flight(), 2u);
}

TEST(Scheduler, CancelFreesKvAtOnce) {
  Loaded lm = load(stories());
  Engine eng(*lm.model, *lm.tokenizer, lm.engine_options());
  RequestParams p = req(lm.tokenizer->encode("Once upon a time", true, false), -1);  // to the context's end
  p.ignore_eos = true;
  // The tiny model can write its whole context before the cancel lands (a fast CPU): then it is
  // tried again, until one request was caught while it held cache.
  uint64_t cancelled = 0;
  for (int attempt = 0; attempt < 20 && cancelled == 0; ++attempt) {
    auto h = eng.submit(p);
    auto first = h->next(60s);
    ASSERT_TRUE(first.has_value());
    const bool held = eng.kv_usage().used_tokens > 0;
    h->cancel();
    Output rest = collect(*h);
    EXPECT_EQ(eng.kv_usage().used_tokens, 0);
    EXPECT_EQ(eng.kv_usage().sequences, 0);
    if (rest.finish_reason == "length") continue;  // finished first
    EXPECT_EQ(rest.finish_reason, "cancelled");
    EXPECT_TRUE(held);
    cancelled = eng.stats().requests_cancelled;
  }
  EXPECT_EQ(cancelled, 1u);
}

TEST(Scheduler, LengthLimitsAndValidation) {
  Loaded lm = load(stories(), "paged", 0, 64);
  EngineOptions eo = lm.engine_options();
  eo.max_num_seqs = 1;
  eo.max_waiting = 0;
  Engine eng(*lm.model, *lm.tokenizer, eo);
  const auto prompt = lm.tokenizer->encode("Once upon a time", true, false);
  // Context full: ends with "length" at the capacity.
  RequestParams p = req(prompt, -1);
  p.ignore_eos = true;
  Output o = collect(*eng.submit(p));
  EXPECT_EQ(o.finish_reason, "length");
  EXPECT_EQ(o.prompt_tokens + o.completion_tokens, 64);
  // max_tokens = 0: nothing generated.
  o = collect(*eng.submit(req(prompt, 0)));
  EXPECT_EQ(o.completion_tokens, 0);
  EXPECT_EQ(o.finish_reason, "length");
  // Prompt longer than the context.
  std::vector<int32_t> big(64, prompt.back());
  EXPECT_THROW(eng.submit(req(big, 4)), ContextLengthError);
  // Prompt + max_tokens above the context: refused, not silently cut; exactly the context is fine.
  EXPECT_THROW(eng.submit(req(prompt, 64)), ContextLengthError);
  RequestParams exact = req(prompt, 64 - static_cast<int>(prompt.size()));
  exact.ignore_eos = true;
  o = collect(*eng.submit(exact));
  EXPECT_EQ(o.prompt_tokens + o.completion_tokens, 64);
  EXPECT_THROW(eng.submit(req({}, 4)), Error);
  EXPECT_THROW(eng.submit(req({1, 999999}, 4)), Error);
  // Busy: one running, no waiting room.
  RequestParams slow = req(prompt, -1);
  slow.ignore_eos = true;
  auto h = eng.submit(slow);
  try {
    eng.submit(req(prompt, 4));
    ADD_FAILURE() << "expected BusyError";
  } catch (const BusyError& e) {
    EXPECT_NE(std::string(e.what()).find("busy"), std::string::npos);
  }
  h->cancel();
  collect(*h);
}

TEST(Scheduler, PrefixCacheServesRepeatedPrompts) {
  Loaded lm = load(stories(), "paged", 0, 512, /*prefix_cache=*/true);
  Loaded ref = load(stories(), "contiguous");
  std::string text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
  const auto prompt = lm.tokenizer->encode(text + " One day", true, false);
  ASSERT_GT(prompt.size(), 32u);
  const Output want = reference(ref, prompt, 24);
  Engine eng(*lm.model, *lm.tokenizer, lm.engine_options());
  Output first = collect(*eng.submit(req(prompt, 24)));
  auto h = eng.submit(req(prompt, 24));
  int cached = 0;
  Output second;
  for (int i = 0; i < 6000; ++i) {
    auto e = h->next(100ms);
    if (!e) continue;
    second.tokens.insert(second.tokens.end(), e->tokens.begin(), e->tokens.end());
    if (e->finished) {
      cached = e->cached_tokens;
      break;
    }
  }
  EXPECT_EQ(first.tokens, want.tokens);
  EXPECT_EQ(second.tokens, want.tokens);
  EXPECT_GE(cached, 16);  // at least one full block came from the cache
  EXPECT_EQ(eng.stats().cached_prompt_tokens, static_cast<uint64_t>(cached));
}

TEST(Scheduler, LogprobsAreNormalized) {
  Loaded lm = load(stories());
  Engine eng(*lm.model, *lm.tokenizer, lm.engine_options());
  RequestParams p = req(lm.tokenizer->encode("Once upon a time", true, false), 5);
  p.logprobs = 3;
  auto h = eng.submit(p);
  int n = 0;
  for (int i = 0; i < 600; ++i) {
    auto e = h->next(100ms);
    if (!e) continue;
    for (const auto& lp : e->logprobs) {
      ASSERT_EQ(lp.top.size(), 3u);
      EXPECT_EQ(lp.top[0].first, lp.id);  // greedy: the best token is the chosen one
      EXPECT_LE(lp.logprob, 0.0f);
      EXPECT_GE(lp.top[0].second, lp.top[1].second);
      ++n;
    }
    if (e->finished) break;
  }
  EXPECT_EQ(n, 5);
}

// A metrics scrape may read the KV cache while the engine shuts down (a server draining): the
// engine thread's final reset of the cache must not race with kv_usage() (the
// ThreadSanitizer run checks it; the prefix cache gives the reset something to clear).
TEST(Scheduler, KvReadableWhileShuttingDown) {
  Loaded lm = load(stories(), "paged", 0, 512, /*prefix_cache=*/true);
  Engine eng(*lm.model, *lm.tokenizer, lm.engine_options());
  const auto prompt = lm.tokenizer->encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.", true,
      false);
  collect(*eng.submit(req(prompt, 8)));
  ASSERT_GT(eng.kv_usage().prefix_entries, 0);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread scraper([&] {
    while (!done.load()) {
      EXPECT_EQ(eng.kv_usage().sequences, 0);
      (void)eng.kv_usage().prefix_hits;
      ++reads;
    }
  });
  while (reads.load() < 100) std::this_thread::yield();
  eng.shutdown(true);
  done = true;
  scraper.join();
  EXPECT_EQ(eng.kv_usage().prefix_entries, 0);
}

// Client threads submit, read and cancel while the engine steps; then the engine is shut down
// without draining while requests still run. Every request ends exactly once with its own output
// (or cancelled), the counters add up and the KV cache is empty; the ThreadSanitizer run checks
// the locking between the client threads and the engine thread.
TEST(Scheduler, ClientThreadsSubmitCancelAndShutdownConcurrently) {
  Loaded ref = load(stories(), "contiguous");
  Loaded lm = load(stories());
  const auto prompt = lm.tokenizer->encode("Once upon a time", true, false);
  Output want = reference(ref, prompt, 16);
  ASSERT_EQ(want.tokens.size(), 16u);
  EngineOptions eo = lm.engine_options();
  eo.max_num_seqs = 4;
  eo.max_batched_tokens = 64;
  Engine eng(*lm.model, *lm.tokenizer, eo);
  constexpr int kThreads = 4, kPerThread = 6;
  std::atomic<int> ended{0}, cancelled{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const bool cancel = (t + i) % 2 == 1;  // after its first event; it would run to the context's end
        RequestParams p = req(prompt, cancel ? -1 : 16);
        p.ignore_eos = true;
        auto h = eng.submit(p);
        Output o;
        for (int n = 0; n < 6000; ++n) {
          auto e = h->next(100ms);
          if (!e) continue;
          if (cancel) h->cancel();
          o.tokens.insert(o.tokens.end(), e->tokens.begin(), e->tokens.end());
          if (e->finished) {
            o.finish_reason = e->finish_reason;
            break;
          }
        }
        ++ended;
        if (o.finish_reason == "cancelled") {
          ++cancelled;
        } else {
          EXPECT_EQ(o.finish_reason, "length") << "thread " << t << " request " << i;
          EXPECT_EQ(o.tokens, want.tokens) << "thread " << t << " request " << i;
        }
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(ended.load(), kThreads * kPerThread);
  EXPECT_GT(cancelled.load(), 0);
  EngineStats st = eng.stats();
  EXPECT_EQ(st.requests_submitted, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(st.requests_finished + st.requests_cancelled, st.requests_submitted);
  EXPECT_EQ(st.requests_cancelled, static_cast<uint64_t>(cancelled.load()));

  // Shutdown without draining while requests run (one handle already dropped by its client): each
  // ends once.
  std::vector<std::shared_ptr<RequestHandle>> running;
  for (int i = 0; i < 6; ++i) {
    RequestParams p = req(prompt, -1);  // to the context's end
    p.ignore_eos = true;
    running.push_back(eng.submit(p));
  }
  ASSERT_TRUE(running[0]->next(60s).has_value());
  running.back().reset();
  running.pop_back();
  std::thread stopper([&] { eng.shutdown(/*drain=*/false); });
  for (auto& h : running) {
    const std::string reason = collect(*h).finish_reason;  // "length" if it reached the context first
    EXPECT_TRUE(reason == "cancelled" || reason == "length") << reason;
  }
  stopper.join();
  EXPECT_THROW(eng.submit(req(prompt, 4)), BusyError);
  st = eng.stats();
  EXPECT_EQ(st.requests_finished + st.requests_cancelled, st.requests_submitted);
  EXPECT_EQ(eng.kv_usage().sequences, 0);
}

}  // namespace
}  // namespace ferrum::engine_test
