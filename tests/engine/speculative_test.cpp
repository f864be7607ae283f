// Speculative decoding: greedy output with a proposer is token for token the output without one
// (every dense family and the MoE one, the newer families with windowed layers rolled back, a quantized draft
// and prompt lookup, paged and contiguous caches, concurrent requests under preemption), sampled output keeps
// the target's distribution (chi-square against the plain engine), and the proposers' own rules.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "engine/draft_length.h"
#include "engine/draft_model_proposer.h"
#include "engine/engine.h"
#include "engine/ngram_proposer.h"
#include "ferrum/lora.h"
#include "formats/convert_hf.h"
#include "grammar/grammar_cache.h"
#include "greedy_reference.h"
#include "loading/loader.h"
#include "models/quantize.h"
#include "test_util.h"

namespace ferrum::speculative_test {
namespace {

using namespace std::chrono_literals;

std::string stories() {
  return std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf";
}
// The newer families (tests/data/families) as ferrum converts and quantizes them.
std::string family_fixture(const std::string& family, const std::string& type) {
  const std::string dir = test::temp_dir(), hf = dir + "/hf", f32 = dir + "/f32.gguf",
                    out = dir + "/" + type + ".gguf";
  const std::string src = test::data_path("families/" + family + "/hf");
  std::filesystem::create_directories(hf);
  for (const auto& e : std::filesystem::directory_iterator(src)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".xz"))
      std::filesystem::copy_file(test::unxz("families/" + family + "/hf/" + name.substr(0, name.size() - 3)),
                                 hf + "/" + name.substr(0, name.size() - 3));
    else
      std::filesystem::copy_file(e.path(), hf + "/" + name);
  }
  convert_hf_to_gguf(hf, f32);
  quantize_model(f32, out, type, 2);
  return out;
}

std::string fixture(const std::string& family, const std::string& type) {
  if (std::filesystem::exists(test::data_path("families/" + family))) return family_fixture(family, type);
  return test::data_path("models/" + family + "/gguf/" + family + "-" + type + ".gguf");
}

LoadedModel load(const std::string& path) {
  ModelOptions o;
  o.n_threads = 2;
  return load_model(path, o);
}

struct Output {
  std::vector<int32_t> tokens;
  std::string text, finish_reason;
  int completion_tokens = 0;
  size_t logprobs = 0;
};

Output collect(RequestHandle& h) {
  Output o;
  for (int i = 0; i < 6000; ++i) {
    auto e = h.next(100ms);
    if (!e) continue;
    o.tokens.insert(o.tokens.end(), e->tokens.begin(), e->tokens.end());
    o.text += e->text;
    o.logprobs += e->logprobs.size();
    if (e->finished) {
      o.finish_reason = e->finish_reason;
      o.completion_tokens = e->completion_tokens;
      return o;
    }
  }
  ADD_FAILURE() << "request did not finish";
  return o;
}

RequestParams greedy_request(const std::vector<int32_t>& prompt, int max_tokens) {
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = max_tokens;
  p.sampling.temperature = 0;
  p.at_text_start = false;
  p.logprobs = 0;
  return p;
}

KvOptions kv_options(const std::string& layout, int64_t pool = 0) {
  KvOptions kv;
  kv.layout = parse_kv_layout(layout);
  kv.capacity = 256;
  kv.pool_tokens = pool;
  return kv;
}

std::vector<std::vector<int32_t>> prompts(const Tokenizer& tok) {
  std::vector<std::vector<int32_t>> out;
  for (const char* t :
       {"Once upon a time", "The cat sat on the mat. The cat sat on the", "1, 2, 3, 4, 5, 6,", "Hello"})
    out.push_back(tok.encode(t, true, false));
  return out;
}

// Every request of a greedy engine run with `spec` equals the plain greedy loop's output.
void expect_greedy_unchanged(LoadedModel& target, const KvOptions& kv, SpecOptions spec, int max_num_seqs,
                             int max_tokens, bool expect_accepted) {
  const auto ps = prompts(*target.tokenizer);
  std::vector<test::GreedyRun> want;
  for (const auto& p : ps)
    want.push_back(test::greedy_reference(*target.model, kv, *target.tokenizer, p, max_tokens));
  EngineOptions eo;
  eo.kv = kv;
  eo.max_num_seqs = max_num_seqs;
  eo.max_batched_tokens = 64;
  eo.spec = std::move(spec);
  Engine eng(*target.model, *target.tokenizer, eo);
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (const auto& p : ps) hs.push_back(eng.submit(greedy_request(p, max_tokens)));
  for (size_t i = 0; i < hs.size(); ++i) {
    const Output got = collect(*hs[i]);
    EXPECT_EQ(got.tokens, want[i].tokens) << "request " << i;
    EXPECT_EQ(got.text, want[i].text) << "request " << i;
    EXPECT_EQ(got.finish_reason, want[i].finish_reason) << "request " << i;
    EXPECT_EQ(got.completion_tokens, static_cast<int>(want[i].tokens.size())) << "request " << i;
    EXPECT_EQ(got.logprobs, want[i].tokens.size()) << "request " << i;
  }
  const EngineStats st = eng.stats();
  EXPECT_GT(st.spec_verify_steps, 0u) << "nothing was proposed: the test would not test speculation";
  if (expect_accepted) EXPECT_GT(st.spec_accepted, 0u);
  EXPECT_LE(st.spec_accepted, st.spec_proposed);
  EXPECT_EQ(eng.kv_usage().sequences, 0);
}

struct Case {
  std::string family, proposer, layout;
};

class SpeculativeGreedy : public ::testing::TestWithParam<Case> {};

TEST_P(SpeculativeGreedy, OutputIsTokenForTokenThePlainGreedyOutput) {
  const Case c = GetParam();
  LoadedModel target = load(fixture(c.family, "Q8_0"));
  LoadedModel draft;
  SpecOptions spec;
  spec.draft_max = 4;
  if (c.proposer == "ngram") {
    spec.proposer = std::make_shared<NgramProposer>();
  } else {
    draft = load(fixture(c.family, "Q4_0"));
    check_draft_vocab(*target.tokenizer, *draft.tokenizer);
    spec.proposer = std::make_shared<DraftModelProposer>(*draft.model, target.model->config().n_vocab);
  }
  // The families with 16-token windows run past their window and its 64-position rollback.
  const bool windowed = target.model->config().sliding_window > 0;
  expect_greedy_unchanged(target, kv_options(c.layout), spec, 4, windowed ? 100 : 40, c.proposer == "draft");
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* f : {"llama", "llama3-ropescaled", "qwen2", "qwen3", "qwen3moe", "gemma3", "mistral"})
    for (const char* p : {"ngram", "draft"})
      for (const char* l : {"paged", "contiguous"}) out.push_back({f, p, l});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Families, SpeculativeGreedy, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string s = info.param.family + "_" + info.param.proposer + "_" + info.param.layout;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

// Eight requests at once in a pool too small for all of them: drafts are dropped when they do
// not fit, sequences are preempted and recomputed, and every output is still the plain one.
TEST(Speculative, EightConcurrentRequestsUnderPreemptionKeepTheirGreedyOutput) {
  LoadedModel target = load(stories());
  for (const char* proposer : {"ngram", "draft"}) {
    SCOPED_TRACE(proposer);
    SpecOptions spec;
    spec.proposer = std::string(proposer) == "ngram"
                        ? std::shared_ptr<Proposer>(std::make_shared<NgramProposer>())
                        : std::make_shared<DraftModelProposer>(*target.model, target.model->config().n_vocab);
    const KvOptions kv = kv_options("paged", 96);
    const std::vector<std::string> texts = {
        "Once upon a time",   "The cat",     "Lily and Tom went to the park", "One day, a little bird",
        "Sam had a red ball", "The sun was", "There was a big dog named Max", "Mom said"};
    EngineOptions eo;
    eo.kv = kv;
    eo.max_num_seqs = 8;
    eo.max_batched_tokens = 32;
    eo.spec = spec;
    std::vector<std::vector<int32_t>> ps;
    std::vector<test::GreedyRun> want;
    for (const auto& t : texts) {
      ps.push_back(target.tokenizer->encode(t, true, false));
      want.push_back(
          test::greedy_reference(*target.model, kv_options("contiguous"), *target.tokenizer, ps.back(), 40));
    }
    Engine eng(*target.model, *target.tokenizer, eo);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (const auto& p : ps) hs.push_back(eng.submit(greedy_request(p, 40)));
    for (size_t i = 0; i < hs.size(); ++i) {
      const Output got = collect(*hs[i]);
      EXPECT_EQ(got.tokens, want[i].tokens) << texts[i];
      EXPECT_EQ(got.text, want[i].text) << texts[i];
    }
    const EngineStats st = eng.stats();
    EXPECT_GT(st.preemptions, 0u);
    EXPECT_GT(st.spec_accepted, 0u);
  }
}

// A request that turns speculation off is decoded one token per step.
TEST(Speculative, ARequestCanTurnItOff) {
  LoadedModel target = load(stories());
  EngineOptions eo;
  eo.kv = kv_options("paged");
  eo.spec.proposer = std::make_shared<DraftModelProposer>(*target.model, target.model->config().n_vocab);
  Engine eng(*target.model, *target.tokenizer, eo);
  RequestParams p = greedy_request(target.tokenizer->encode("Once upon a time", true, false), 30);
  p.speculative = false;
  const Output got = collect(*eng.submit(p));
  EXPECT_EQ(got.tokens.size(), 30u);
  EXPECT_EQ(eng.stats().spec_proposed, 0u);
  EXPECT_EQ(eng.stats().steps, 30u);
}

// Above --spec-max-batch running sequences a step proposes nothing; at or below it, it does.
TEST(Speculative, NoDraftsInStepsAboveTheBatchLimit) {
  LoadedModel target = load(stories());
  for (int limit : {1, 4}) {
    EngineOptions eo;
    eo.kv = kv_options("paged");
    eo.max_num_seqs = 4;
    eo.spec.proposer = std::make_shared<DraftModelProposer>(*target.model, target.model->config().n_vocab);
    eo.spec.max_batch = limit;
    Engine eng(*target.model, *target.tokenizer, eo);
    // Submitted while the engine cannot step, so all four run from the first decode on; read the
    // counters while all four still run (they would end at different steps, the last alone).
    std::vector<std::shared_ptr<RequestHandle>> hs;
    eng.with_model([&](Model&) {
      for (int i = 0; i < 4; ++i) {
        RequestParams p = greedy_request(target.tokenizer->encode("Once upon a time", true, false), -1);
        p.ignore_eos = true;
        hs.push_back(eng.submit(p));
      }
    });
    for (auto& h : hs) {
      size_t n = 0;
      while (n < 12) {
        auto e = h->next(10s);
        ASSERT_TRUE(e && !e->finished);
        n += e->tokens.size();
      }
    }
    if (limit == 1)
      EXPECT_EQ(eng.stats().spec_proposed, 0u);
    else
      EXPECT_GT(eng.stats().spec_proposed, 0u);
    eng.shutdown(/*drain=*/false);
  }
}

// With a grammar, each verified position is masked by the grammar state of the tokens emitted
// before it: greedy output with speculation is the constrained greedy output without it.
TEST(Speculative, WithAGrammarTheOutputIsTheConstrainedGreedyOutput) {
  LoadedModel target = load(stories());
  grammar::GrammarCache grammars(*target.tokenizer);
  const auto json_object = grammars.get({grammar::GrammarSpec::Kind::JsonObject, ""});
  auto run = [&](std::shared_ptr<Proposer> proposer) {
    EngineOptions eo;
    eo.kv = kv_options("paged");
    eo.spec.proposer = std::move(proposer);
    Engine eng(*target.model, *target.tokenizer, eo);
    RequestParams p = greedy_request({target.tokenizer->bos_id()}, 120);
    p.grammar = json_object;
    const Output o = collect(*eng.submit(p));
    return std::make_pair(o, eng.stats());
  };
  const auto [plain, plain_stats] = run(nullptr);
  ASSERT_FALSE(plain.text.empty());
  EXPECT_EQ(plain.text.front(), '{') << plain.text;
  for (auto proposer : {std::shared_ptr<Proposer>(std::make_shared<NgramProposer>(NgramOptions{1, 4})),
                        std::shared_ptr<Proposer>(std::make_shared<DraftModelProposer>(
                            *target.model, target.model->config().n_vocab))}) {
    const auto [got, st] = run(proposer);
    EXPECT_EQ(got.tokens, plain.tokens) << proposer->name();
    EXPECT_EQ(got.text, plain.text) << proposer->name();
    EXPECT_EQ(got.finish_reason, plain.finish_reason) << proposer->name();
    EXPECT_GT(st.spec_verify_steps, 0u) << proposer->name();
  }
}

// A request with a LoRA adapter verifies its drafts with the adapter (the draft model runs
// without it): greedy output equals the adapter's plain greedy output.
TEST(Speculative, WithALoraAdapterTheOutputIsTheAdaptersGreedyOutput) {
  LoadedModel target = load(fixture("llama", "Q8_0"));
  LoadedModel draft = load(fixture("llama", "Q4_0"));
  const std::vector<LoraSpec> specs = {parse_lora_spec(test::data_path("lora/llama-a.gguf"))};
  const auto adapter = load_lora(*target.model, specs);
  auto run = [&](std::shared_ptr<Proposer> proposer) {
    EngineOptions eo;
    eo.kv = kv_options("paged");
    eo.spec.proposer = std::move(proposer);
    Engine eng(*target.model, *target.tokenizer, eo);
    RequestParams p = greedy_request(target.tokenizer->encode("Once upon a time", true, false), 40);
    p.lora = adapter;
    const Output o = collect(*eng.submit(p));
    return std::make_pair(o, eng.stats());
  };
  const auto [plain, plain_stats] = run(nullptr);
  RequestParams base = greedy_request(target.tokenizer->encode("Once upon a time", true, false), 40);
  const auto [spec, st] =
      run(std::make_shared<DraftModelProposer>(*draft.model, target.model->config().n_vocab));
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_GT(st.spec_verify_steps, 0u);
  // The adapter matters: the base model's greedy output differs.
  const test::GreedyRun without =
      test::greedy_reference(*target.model, kv_options("paged"), *target.tokenizer, base.prompt, 40);
  EXPECT_NE(without.tokens, plain.tokens);
}

// --- sampling: the distribution is the target's -------------------------------------------

// Two-sample chi-square statistic over the tokens seen, bins with fewer than 10 observations in
// both samples pooled into one; returns {statistic, degrees of freedom}.
std::pair<double, int> chi_square_two_sample(const std::map<int32_t, int>& a,
                                             const std::map<int32_t, int>& b) {
  std::map<int32_t, std::pair<double, double>> bins;
  for (const auto& [t, n] : a) bins[t].first += n;
  for (const auto& [t, n] : b) bins[t].second += n;
  std::vector<std::pair<double, double>> merged;
  std::pair<double, double> rest{0, 0};
  for (const auto& [t, c] : bins) {
    if (c.first + c.second < 10)
      rest = {rest.first + c.first, rest.second + c.second};
    else
      merged.push_back(c);
  }
  if (rest.first + rest.second > 0) merged.push_back(rest);
  double na = 0, nb = 0;
  for (const auto& c : merged) na += c.first, nb += c.second;
  double chi = 0;
  for (const auto& c : merged) {
    const double tot = c.first + c.second;
    const double ea = tot * na / (na + nb), eb = tot * nb / (na + nb);
    chi += (c.first - ea) * (c.first - ea) / ea + (c.second - eb) * (c.second - eb) / eb;
  }
  return {chi, static_cast<int>(merged.size()) - 1};
}

// The chi-square critical value at significance 1e-4 (Wilson-Hilferty; z = 3.719).
double chi_square_critical(int df) {
  const double z = 3.719, h = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - h + z * std::sqrt(h), 3);
}

// Tokens 2..4 of 600 sampled continuations (temperature 0.8, no truncation) of a story prompt
// whose words the continuation tends to repeat, so prompt lookup proposes in about a third of
// the steps: with speculation and without, the per-position token histograms must agree
// (two-sample chi-square, significance 1e-4). Checked by breaking the rule once: accepting every
// draft gives chi-square about 10 times the threshold. (A subtler break, drawing rejections from
// p instead of the residual, is caught by Sampler.VerifyKeepsTheTargetDistribution.)
TEST(Speculative, SampledTokensHaveTheTargetsDistribution) {
  LoadedModel target = load(stories());
  const auto prompt = target.tokenizer->encode(
      "Once upon a time, there was a little girl named Lily. She liked to play with her ball in the park. "
      "One day, "
      "Lily saw a big dog in the park. The dog wanted to play with the ball too. Lily",
      true, false);
  constexpr int kRequests = 600, kTokens = 4;
  auto run = [&](bool speculative) {
    EngineOptions eo;
    eo.kv = kv_options("paged");
    eo.kv.capacity = 96;
    eo.kv.prefix_cache = true;  // the shared prompt is computed once
    eo.max_num_seqs = 16;
    eo.max_waiting = kRequests;
    eo.max_batched_tokens = 512;
    if (speculative) {
      eo.spec.proposer = std::make_shared<NgramProposer>(NgramOptions{1, 4});
      eo.spec.draft_max = 3;
      eo.spec.adaptive = false;
    }
    Engine eng(*target.model, *target.tokenizer, eo);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (int i = 0; i < kRequests; ++i) {
      RequestParams p;
      p.prompt = prompt;
      p.max_tokens = kTokens;
      p.ignore_eos = true;
      p.sampling.temperature = 0.8f;
      p.sampling.top_k = 0;
      p.sampling.top_p = 1.0f;
      p.sampling.min_p = 0.0f;
      p.sampling.seed = 1000 + i + (speculative ? 7919 : 0);
      hs.push_back(eng.submit(p));
    }
    std::vector<std::map<int32_t, int>> hist(kTokens);
    for (auto& h : hs) {
      const Output o = collect(*h);
      for (int t = 0; t < kTokens && t < static_cast<int>(o.tokens.size()); ++t) hist[t][o.tokens[t]]++;
    }
    const EngineStats st = eng.stats();
    if (speculative) {
      EXPECT_GT(st.spec_proposed, static_cast<uint64_t>(kRequests / 4));  // drafts in many steps
      EXPECT_GT(st.spec_accepted, 0u);
      EXPECT_LT(st.spec_accepted, st.spec_proposed);  // some rejected: the residual is exercised
    }
    return hist;
  };
  const auto plain = run(false), spec = run(true);
  for (int t = 1; t < kTokens; ++t) {
    const auto [chi, df] = chi_square_two_sample(plain[t], spec[t]);
    ASSERT_GT(df, 3) << "token " << t << ": too few distinct tokens for the test to mean anything";
    EXPECT_LT(chi, chi_square_critical(df))
        << "token " << t << ": chi-square " << chi << " with " << df << " df";
  }
}

TEST(DraftLength, AdaptsAndPausesACostlyProposerThatKeepsFailing) {
  DraftLength d(4, /*adaptive=*/true, /*costly=*/true);
  EXPECT_EQ(d.next(), 4);
  d.on_result(4, 0);  // none accepted: one fewer
  EXPECT_EQ(d.next(), 3);
  d.on_result(3, 3);  // all: one more
  EXPECT_EQ(d.next(), 4);
  d.on_result(4, 4);  // capped at the maximum
  EXPECT_EQ(d.next(), 4);
  for (int i = 0; i < 3; ++i) d.on_result(d.next(), 0);
  EXPECT_EQ(d.length(), 1);
  // Failing at one token: pauses of 1, 2, 4 steps.
  std::vector<int> got;
  for (int step = 0; step < 12; ++step) {
    const int k = d.next();
    got.push_back(k);
    if (k > 0) d.on_result(k, 0);
  }
  EXPECT_EQ(got, (std::vector<int>{1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
  d.on_result(1, 1);  // accepted: one more token, and the doubling starts over
  while (d.next() == 0) {
  }  // (the pause already running ends)
  d.on_result(2, 0);
  EXPECT_EQ(d.next(), 1);
  d.on_result(1, 0);  // failing at one token again: a pause of 1
  EXPECT_EQ(d.next(), 0);
  EXPECT_EQ(d.next(), 1);
  // A lookup proposer is never paused; --draft-fixed never adapts.
  DraftLength lookup(2, true, false);
  for (int i = 0; i < 5; ++i) lookup.on_result(lookup.next(), 0);
  EXPECT_EQ(lookup.next(), 1);
  DraftLength fixed(3, false, true);
  for (int i = 0; i < 5; ++i) fixed.on_result(fixed.next(), 0);
  EXPECT_EQ(fixed.next(), 3);
}

// --- proposers -----------------------------------------------------------------------------

TEST(NgramLookup, ProposesWhatFollowedTheMostRecentLongestMatch) {
  std::vector<int32_t> out;
  // Suffix "1 2" occurred at 0 (followed by 3 4) and at 4 (followed by 9 8); most recent wins.
  ngram_lookup(std::vector<int32_t>{1, 2, 3, 4, 1, 2, 9, 8, 7, 1, 2}, 2, 4, 3, out);
  EXPECT_EQ(out, (std::vector<int32_t>{9, 8, 7}));
  // The longest suffix first: "5 1 2" occurred once.
  ngram_lookup(std::vector<int32_t>{5, 1, 2, 6, 1, 2, 7, 5, 1, 2}, 2, 3, 2, out);
  EXPECT_EQ(out, (std::vector<int32_t>{6, 1}));
  // Capped by max_draft; past the end of the context the repetition goes on.
  ngram_lookup(std::vector<int32_t>{4, 4, 4}, 1, 2, 5, out);
  EXPECT_EQ(out, (std::vector<int32_t>{4, 4, 4, 4, 4}));
  ngram_lookup(std::vector<int32_t>{7, 1, 2, 3, 1, 2}, 2, 2, 5, out);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 1, 2, 3, 1}));
  // No match, or too short for min_n.
  ngram_lookup(std::vector<int32_t>{1, 2, 3, 4}, 1, 3, 4, out);
  EXPECT_TRUE(out.empty());
  ngram_lookup(std::vector<int32_t>{7}, 1, 3, 4, out);
  EXPECT_TRUE(out.empty());
}

TEST(DraftModel, AnotherVocabularyIsRefusedNamingTheDifference) {
  LoadedModel llama = load(fixture("llama", "Q4_0")), qwen = load(fixture("qwen2", "Q4_0"));
  try {
    check_draft_vocab(*llama.tokenizer, *qwen.tokenizer);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_draft_vocab(*llama.tokenizer, *load(fixture("llama", "Q8_0")).tokenizer));
}

}  // namespace
}  // namespace ferrum::speculative_test
