// The tiled online-softmax attention kernel against a float64 reference (computed here from the
// cache's own stored values, so only the kernel's arithmetic is measured) for every cache type,
// GQA ratios 1/4/8, head sizes 64/128 (AVX-512 steps) and 40 (generic steps), sliding windows,
// paged and contiguous caches, lengths that are not multiples of the tile or the chunk, decode at
// depth (chunks split over threads) and prefill; and bitwise invariance: a token's output is the
// same alone, in a block of a longer prompt, next to other sequences and with 1 or 3 threads.
#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul.h"

namespace ferrum::kernels {
namespace {

using test::IsaGuard;
using test::supported_tiers;

// Uniform in [-amp, amp] (cheaper than test::gaussian for the long caches here).
std::vector<float> random_values(size_t n, uint32_t seed, float amp = 1.7f) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = amp * (static_cast<float>(rng()) / 2147483648.0f - 1.0f);
  return v;
}

struct Shape {
  int n_head, n_head_kv, hd, window = 0;
  bool causal = true;            // false: bidirectional, every query sees all len keys
  const float* sinks = nullptr;  // per query head (gpt-oss), or none
};

// One sequence's cache of len tokens, contiguous or paged (16-token blocks in shuffled order).
struct TestCache {
  KvType type;
  int n_head_kv, hd;
  int64_t len;
  bool paged;
  size_t row_bytes;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> table;
  std::vector<float> kf, vf;  // the stored values read back: kf[(j * n_head_kv + h) * hd + d]

  TestCache(KvType t, int nkv, int hd_, int64_t len_, bool paged_, uint32_t seed)
      : type(t), n_head_kv(nkv), hd(hd_), len(len_), paged(paged_), row_bytes(kv_row_bytes(t, nkv, hd_)) {
    const int64_t bt = 16, n_blocks = (len + bt - 1) / bt + 3;
    const int64_t slots = paged ? n_blocks * bt : (len + kKvGroup - 1) / kKvGroup * kKvGroup;
    k.assign(slots * row_bytes, 0xFF);  // unused slots hold NaN patterns for F32/F16/BF16
    v.assign(slots * row_bytes, 0xFF);
    table.resize(paged ? n_blocks : 1);
    std::iota(table.begin(), table.end(), 0);
    if (paged) std::shuffle(table.begin(), table.end(), std::mt19937(seed));
    const auto src_k = random_values(static_cast<size_t>(len) * nkv * hd, seed + 1);
    const auto src_v = random_values(static_cast<size_t>(len) * nkv * hd, seed + 2);
    kf.resize(src_k.size());
    vf.resize(src_v.size());
    const KvSeqView view = this->view();
    for (int64_t j = 0; j < len; ++j) {
      auto* kg = const_cast<uint8_t*>(view.k_group(j));
      auto* vg = const_cast<uint8_t*>(view.v_group(j));
      const int i = static_cast<int>(j % kKvGroup);
      kv_store_key(t, &src_k[j * nkv * hd], kg, i, nkv, hd);
      kv_store_value(t, &src_v[j * nkv * hd], vg, i, nkv, hd);
      for (int h = 0; h < nkv; ++h) {
        kv_load_key(t, kg, i, h, nkv, hd, &kf[(j * nkv + h) * hd]);
        kv_load_value(t, vg, i, h, nkv, hd, &vf[(j * nkv + h) * hd]);
      }
    }
  }
  KvSeqView view() const {
    KvSeqView s;
    s.k_base = k.data();
    s.v_base = v.data();
    s.table = table.data();
    s.block_tokens = paged ? 16 : len;
    s.block_bytes = paged ? 16 * row_bytes : 0;
    s.row_bytes = row_bytes;
    s.type = type;
    return s;
  }
};

AttentionParams params(const Shape& s) {
  AttentionParams p;
  p.n_head = s.n_head;
  p.n_head_kv = s.n_head_kv;
  p.head_dim = s.hd;
  p.scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
  p.sliding_window = s.window;
  p.causal = s.causal;
  p.sinks = s.sinks;
  return p;
}

// The queries as an INT8 cache's scores see them (attention_tile.h, QueryRows): each head's row
// rounded to 8 bits with a scale max|q| / 127, written out here on its own.
std::vector<float> int8_queries(const std::vector<float>& q, int hd) {
  std::vector<float> out(q.size());
  for (size_t r = 0; r < q.size(); r += hd) {
    float amax = 0;
    for (int d = 0; d < hd; ++d) amax = std::max(amax, std::fabs(q[r + d]));
    const float s = amax / 127.0f, inv = s > 0 ? 1.0f / s : 0.0f;
    for (int d = 0; d < hd; ++d) out[r + d] = static_cast<float>(std::nearbyint(q[r + d] * inv)) * s;
  }
  return out;
}

// Float64 attention of query rows q (n_tok x n_head*hd) at positions pos0.. against the cache
// (INT8 caches: against the 8-bit queries, unless exact_queries).
std::vector<double> reference(const Shape& s, const TestCache& c, const std::vector<float>& q_in,
                              int64_t n_tok, int64_t pos0, bool exact_queries = false) {
  const std::vector<float> q = c.type == KvType::INT8 && !exact_queries ? int8_queries(q_in, s.hd) : q_in;
  const int group = s.n_head / s.n_head_kv, hd = s.hd;
  std::vector<double> out(static_cast<size_t>(n_tok) * s.n_head * hd, 0.0);
  for (int64_t t = 0; t < n_tok; ++t) {
    const int64_t pos = s.causal ? pos0 + t : pos0 + n_tok - 1,
                  lo = s.window > 0 ? std::max<int64_t>(0, pos - s.window + 1) : 0;
    for (int h = 0; h < s.n_head; ++h) {
      const int hk = h / group;
      std::vector<double> sc(pos - lo + 1);
      for (int64_t j = lo; j <= pos; ++j) {
        double dot = 0;
        for (int d = 0; d < hd; ++d)
          dot += double(q[(t * s.n_head + h) * hd + d]) * c.kf[(j * s.n_head_kv + hk) * hd + d];
        sc[j - lo] = dot / std::sqrt(double(hd));
      }
      double mx = *std::max_element(sc.begin(), sc.end());
      if (s.sinks) mx = std::max(mx, double(s.sinks[h]));
      double sum = s.sinks ? std::exp(double(s.sinks[h]) - mx) : 0.0;  // a sink: in the sum, no value
      for (double& x : sc) sum += (x = std::exp(x - mx));
      for (int64_t j = lo; j <= pos; ++j)
        for (int d = 0; d < hd; ++d)
          out[(t * s.n_head + h) * hd + d] += sc[j - lo] / sum * c.vf[(j * s.n_head_kv + hk) * hd + d];
    }
  }
  return out;
}

std::vector<float> run(const Shape& s, const TestCache& c, const std::vector<float>& q, int64_t n_tok,
                       int64_t pos0, int threads) {
  std::vector<float> out(static_cast<size_t>(n_tok) * s.n_head * s.hd, NAN);
  AttentionJob job;
  job.q = q.data();
  job.ldq = s.n_head * s.hd;
  job.n_tok = n_tok;
  job.pos0 = pos0;
  job.kv = c.view();
  job.out = out.data();
  job.ldo = s.n_head * s.hd;
  ThreadPool pool(threads);
  AttentionScratch scratch;
  attention(params(s), &job, 1, pool, scratch);
  return out;
}

// Largest |got - want| over the outputs, relative to the outputs' largest magnitude.
double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    mag = std::max(mag, std::fabs(want[i]));
  }
  return err / mag;
}

struct Case {
  Shape shape;
  KvType type;
  bool paged;
  int64_t len;    // tokens in the cache after the call
  int64_t n_tok;  // query tokens of the call (the last n_tok positions)
};

// INT8 caches also round each probability (times its value scale) to 16 bits per cache group
// (attention_tile.h, kProbLevels): up to 1/65534 of the group's largest term per key, measured
// 2-5e-5 of the outputs here; the float64 reference does not round them, so their bound is wider
// (8-bit probabilities would be ~4e-3).
double tolerance(KvType t) {
  return t == KvType::INT8 ? 2e-4 : 1e-5;
}

// Case k against its float64 reference, on each tier of `isas` in turn (forced; the cache, the
// queries and the reference are made once), or on the tier in use when `isas` is empty.
void check(const Case& k, int threads, const std::vector<const char*>& isas = {}) {
  const double tol = tolerance(k.type);
  const TestCache c(k.type, k.shape.n_head_kv, k.shape.hd, k.len, k.paged, 7 + static_cast<uint32_t>(k.len));
  const auto q = random_values(static_cast<size_t>(k.n_tok) * k.shape.n_head * k.shape.hd, 99, 2.0f);
  const int64_t pos0 = k.len - k.n_tok;
  const auto want = reference(k.shape, c, q, k.n_tok, pos0);
  const std::vector<const char*> tiers = isas.empty() ? std::vector<const char*>{active_isa()} : isas;
  for (const char* isa : tiers) {
    if (!isas.empty()) force_isa(isa);
    const double err = rel_error(run(k.shape, c, q, k.n_tok, pos0, threads), want);
    if (std::getenv("FERRUM_TEST_PRINT_ERR"))
      std::printf("%s %s hd %d len %ld ntok %ld: %.3g\n", kv_type_name(k.type), isa, k.shape.hd, (long)k.len,
                  (long)k.n_tok, err);
    EXPECT_LT(err, tol) << isa << " " << kv_type_name(k.type) << (k.paged ? " paged" : " contiguous")
                        << " heads " << k.shape.n_head << "/" << k.shape.n_head_kv << " hd " << k.shape.hd
                        << " window " << k.shape.window << (k.shape.causal ? "" : " bidirectional") << " len "
                        << k.len << " n_tok " << k.n_tok << " threads " << threads;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const Shape shapes[] = {{4, 4, 64},      {8, 2, 128},          {16, 2, 64},           {4, 1, 40},
                          {8, 2, 64, 100}, {4, 4, 64, 0, false}, {8, 2, 128, 0, false}, {4, 1, 40, 0, false}};
  const KvType types[] = {KvType::F32, KvType::F16, KvType::BF16, KvType::INT8};
  for (const Shape& s : shapes)
    for (KvType t : types)
      for (bool paged : {false, true}) {
        out.push_back({s, t, paged, 1, 1});      // first token
        out.push_back({s, t, paged, 77, 77});    // prefill, not a multiple of the tile
        out.push_back({s, t, paged, 1300, 1});   // decode past a chunk boundary
        out.push_back({s, t, paged, 1100, 40});  // a prompt chunk at depth, across the chunk boundary
      }
  return out;
}

TEST(Attention, MatchesFloat64ReferenceOnEveryIsa) {
  IsaGuard guard;
  // The generic steps (scalar) and a tier with an earlier tier's steps (avx2vnni, neondot): short
  // cases only.
  std::vector<const char*> every, short_only;
  std::vector<const AttentionTileOps*> seen;
  for (const char* isa : supported_tiers()) {
    force_isa(isa);
    const AttentionTileOps* ops = active_kernels().tile_ops;
    const bool again = !ops || std::find(seen.begin(), seen.end(), ops) != seen.end();
    seen.push_back(ops);
    (again ? short_only : every).push_back(isa);
  }
  for (const Case& k : cases()) {
    std::vector<const char*> isas = every;
    if (k.len <= 200) isas.insert(isas.end(), short_only.begin(), short_only.end());
    if (!isas.empty()) check(k, 3, isas);
  }
}

// What 8-bit queries cost an INT8 cache, against its exact-query result, prefill and decode
// (FERRUM_TEST_PRINT_ERR=1 prints it).
TEST(Attention, Int8QueryRoundingErrorIsBounded) {
  for (const Case& k :
       {Case{{32, 8, 64}, KvType::INT8, true, 4500, 1}, Case{{32, 8, 64}, KvType::INT8, false, 300, 300},
        Case{{16, 2, 128}, KvType::INT8, true, 2000, 3}}) {
    const TestCache c(k.type, k.shape.n_head_kv, k.shape.hd, k.len, k.paged, 3);
    const auto q = random_values(static_cast<size_t>(k.n_tok) * k.shape.n_head * k.shape.hd, 17, 2.0f);
    const int64_t pos0 = k.len - k.n_tok;
    const auto got = run(k.shape, c, q, k.n_tok, pos0, 2);
    const double err = rel_error(got, reference(k.shape, c, q, k.n_tok, pos0, true));
    if (std::getenv("FERRUM_TEST_PRINT_ERR")) std::printf("int8 queries: len %ld: %.3g\n", (long)k.len, err);
    EXPECT_LT(err, 1e-2) << "len " << k.len;  // measured 0.4-0.7% (the keys themselves are 8-bit)
    EXPECT_GT(err, 1e-6) << "the queries were not rounded";
  }
}

// Attention sinks (gpt-oss): each query head's logit joins the softmax's denominator, on every
// tier, cache type and layout, in prefill, decode past a chunk (split over threads) and a window;
// sinks large enough to take most of the weight; -inf sinks give the plain result bit for bit.
TEST(Attention, SinksJoinTheDenominator) {
  IsaGuard guard;
  const std::vector<float> sinks = {3.0f, -1.0f, 0.5f, 6.0f, 2.0f, -4.0f, 1.0f, 4.5f};
  const std::vector<float> none(8, -INFINITY);
  for (KvType t : {KvType::F32, KvType::F16, KvType::INT8})
    for (const Shape& s : {Shape{8, 2, 64, 0, true, sinks.data()}, Shape{8, 2, 64, 100, true, sinks.data()}})
      for (const auto& [len, n_tok] : {std::pair<int64_t, int64_t>{77, 77}, {1300, 1}, {1100, 40}})
        check({s, t, true, len, n_tok}, 3, supported_tiers());
  for (const char* isa : supported_tiers()) {
    force_isa(isa);
    const Shape plain{8, 2, 64}, inf{8, 2, 64, 0, true, none.data()};
    const TestCache c(KvType::F16, 2, 64, 1300, true, 5);
    const auto q = random_values(8 * 64 * 3, 11, 2.0f);
    EXPECT_EQ(run(plain, c, q, 3, 1297, 2), run(inf, c, q, 3, 1297, 2)) << isa;
  }
}

TEST(Attention, LongDecodeSplitOverThreads) {
  for (KvType t : {KvType::F32, KvType::F16, KvType::INT8})
    for (bool paged : {false, true}) check({{32, 8, 64}, t, paged, 4500, 1}, 2);
}

// A token's output is bitwise the same however the call is made up.
class AttentionBatching : public testing::TestWithParam<KvType> {};

TEST_P(AttentionBatching, TokenResultDoesNotDependOnBatching) {
  const Shape s{8, 2, 64};
  const int64_t len = 2100;
  const TestCache c(GetParam(), s.n_head_kv, s.hd, len, true, 5);
  const TestCache other(GetParam(), s.n_head_kv, s.hd, 300, false, 6);
  const int64_t width = s.n_head * s.hd, n_tok = 37, pos0 = len - n_tok;
  const auto q = random_values(static_cast<size_t>(n_tok) * width, 11);
  const auto whole = run(s, c, q, n_tok, pos0, 1);
  for (int threads : {1, 3}) {
    // Each token alone, as a decode step at its position (split into chunks with several threads).
    for (int64_t t = 0; t < n_tok; t += 5) {
      const std::vector<float> qt(q.begin() + t * width, q.begin() + (t + 1) * width);
      const auto alone = run(s, c, qt, 1, pos0 + t, threads);
      ASSERT_EQ(0, std::memcmp(alone.data(), &whole[t * width], width * sizeof(float))) << "token " << t;
    }
    // Next to another sequence's prefill in one call.
    const auto q2 = random_values(static_cast<size_t>(300) * width, 12);
    std::vector<float> out1(whole.size()), out2(q2.size());
    AttentionJob jobs[2];
    jobs[0] = {q2.data(), width, 300, 0, other.view(), out2.data(), width};
    jobs[1] = {q.data(), width, n_tok, pos0, c.view(), out1.data(), width};
    ThreadPool pool(threads);
    AttentionScratch scratch;
    attention(params(s), jobs, 2, pool, scratch);
    EXPECT_EQ(0, std::memcmp(out1.data(), whole.data(), whole.size() * sizeof(float)))
        << threads << " threads";
    EXPECT_EQ(out2, run(s, other, q2, 300, 0, 1));
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, AttentionBatching, testing::Values(KvType::F16, KvType::INT8),
                         [](const auto& info) { return std::string(kv_type_name(info.param)); });

// Bidirectional: a sentence's outputs are bitwise the same alone or next to other sentences (each
// job sees only its own keys: the padding mask), and they differ from causal attention's.
TEST(Attention, BidirectionalSentencesDoNotSeeEachOther) {
  const Shape s{8, 2, 64, 0, false};
  const int64_t width = s.n_head * s.hd, lens[] = {24, 5, 130};
  std::vector<TestCache> caches;
  std::vector<std::vector<float>> qs, alone, together;
  for (int i = 0; i < 3; ++i) {
    caches.emplace_back(KvType::F32, s.n_head_kv, s.hd, lens[i], false, 40 + i);
    qs.push_back(random_values(static_cast<size_t>(lens[i]) * width, 50 + i));
    alone.push_back(run(s, caches[i], qs[i], lens[i], 0, 2));
    together.emplace_back(qs[i].size());
  }
  AttentionJob jobs[3];
  for (int i = 0; i < 3; ++i)
    jobs[i] = {qs[i].data(), width, lens[i], 0, caches[i].view(), together[i].data(), width};
  ThreadPool pool(2);
  AttentionScratch scratch;
  attention(params(s), jobs, 3, pool, scratch);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(alone[i], together[i]) << "sentence " << i;
  Shape causal = s;
  causal.causal = true;
  EXPECT_NE(alone[0], run(causal, caches[0], qs[0], lens[0], 0, 2));
}

TEST(Attention, RefusesASlidingWindowWithoutCausality) {
  const Shape s{4, 4, 64, 8, false};
  const TestCache c(KvType::F32, 4, 64, 16, false, 1);
  const auto q = random_values(16 * 4 * 64, 2);
  EXPECT_THROW(run(s, c, q, 16, 0, 1), Error);
}

TEST(Attention, RejectsHeadSizesPastTheLimit) {
  const Shape s{1, 1, kMaxHeadDim + 16};
  AttentionJob job;
  job.n_tok = 1;
  ThreadPool pool(1);
  AttentionScratch scratch;
  EXPECT_THROW(attention(params(s), &job, 1, pool, scratch), std::exception);
}

}  // namespace
}  // namespace ferrum::kernels
