#include "kernels/cpu/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/fail.h"
#include "kernels/cpu/attention_tile.h"

namespace ferrum::kernels {

namespace {

constexpr int64_t kQueryBlock = 16;  // query tokens per work item: each K/V tile is loaded once per block
static_assert(kAttentionChunk % kKeyTile == 0, "chunks are made of whole key tiles");

int64_t first_key(const AttentionParams& p, int64_t pos) {
  return p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : int64_t{0};
}

// Softmax state of R query rows: running max, sum of exponentials, unnormalised output (R x hd).
struct RowStates {
  float *m, *l, *acc;
  // The states of R rows laid out at f: m (R), l (R), acc (R x hd).
  static RowStates at(float* f, int64_t R) { return {f, f + R, f + 2 * R}; }
  void clear(int R, int hd) const {
    std::fill_n(m, R, -INFINITY);
    std::fill_n(l, R, 0.0f);
    std::fill_n(acc, static_cast<size_t>(R) * hd, 0.0f);
  }
};

// One thread's buffers (floats, sized for the call's largest item; the INT8 query rows in ints).
struct ThreadBuf {
  float *q, *qs, *kt, *vt, *s, *c;
  int8_t* q8;
  int32_t* q8sum;
  RowStates chunk, merged;
  const uint8_t** kgroups;  // the current tile's cache groups
  const uint8_t** vgroups;
  static size_t floats(int64_t R, int hd) {
    return R * hd + R + 2 * kKeyTile * hd + R * kKeyTile + R + 2 * (2 * R + R * hd);
  }
  static size_t ints(int64_t R, int hd) { return R + (R * hd + 3) / 4; }
  ThreadBuf(float* f, int32_t* ints, const uint8_t** groups, int64_t R, int hd) {
    q = f;
    qs = q + R * hd;
    kt = qs + R;
    vt = kt + kKeyTile * hd;
    s = vt + kKeyTile * hd;
    c = s + R * kKeyTile;
    chunk = RowStates::at(c + R, R);
    merged = RowStates::at(chunk.acc + R * hd, R);
    q8sum = ints;
    q8 = reinterpret_cast<int8_t*>(ints + R);
    kgroups = groups;
    vgroups = groups + kTileGroups;
  }
  QueryRows rows(int hd, bool quantized) const {
    return quantized ? QueryRows{q, q8, qs, q8sum, hd} : QueryRows{q, nullptr, nullptr, nullptr, hd};
  }
};

// Adds one chunk's state (m, l, acc) into the merged state of R rows; a row the chunk has no key
// for (l = 0) is left as it is. The same arithmetic whichever thread computed the chunk.
void merge_states(int R, int hd, const RowStates& part, const RowStates& into) {
  for (int r = 0; r < R; ++r) {
    if (part.l[r] == 0.0f) continue;
    const float* a = part.acc + static_cast<size_t>(r) * hd;
    float* A = into.acc + static_cast<size_t>(r) * hd;
    if (into.l[r] == 0.0f) {
      into.m[r] = part.m[r];
      into.l[r] = part.l[r];
      std::copy_n(a, hd, A);
      continue;
    }
    const float mx = std::max(into.m[r], part.m[r]);
    const float c1 = std::exp(into.m[r] - mx), c2 = std::exp(part.m[r] - mx);
    into.m[r] = mx;
    into.l[r] = into.l[r] * c1 + part.l[r] * c2;
    for (int i = 0; i < hd; ++i) A[i] = std::fma(a[i], c2, A[i] * c1);
  }
}

// The K and V groups of tile [jt, jt + kKeyTile) (jt a multiple of the tile), columns [a, b) used.
void tile_groups(const KvSeqView& kv, int64_t jt, int a, int b, const uint8_t** kg, const uint8_t** vg) {
  for (int g = 0; g < kTileGroups; ++g) {
    const bool used = kKvGroup * g < b && kKvGroup * (g + 1) > a;
    kg[g] = used ? kv.k_group(jt + kKvGroup * g) : nullptr;
    vg[g] = used ? kv.v_group(jt + kKvGroup * g) : nullptr;
  }
}

// Up to this many query rows per KV head read the values straight from the cache (each value row
// is converted once per 4 rows either way); more rows convert the tile once into a buffer.
constexpr int kRowsFromCache = 4;

struct ItemRunner {
  const AttentionParams& p;
  const AttentionTileOps& ops;
  int group, hd;

  // Keys token t sees within chunk [ks, ke) (bidirectional: the whole chunk, cut to the job's keys).
  std::pair<int64_t, int64_t> keys_of(const AttentionJob& J, int64_t t, int64_t ks, int64_t ke) const {
    if (!p.causal) return {ks, ke};
    const int64_t pos = J.pos0 + t;
    return {std::max(first_key(p, pos), ks), std::min(pos + 1, ke)};
  }
  // The item's rows: head by head, token by token, query head of the group.
  int64_t row(const AttentionItem& it, int hk, int64_t t) const {
    return ((hk - it.h0) * (it.t1 - it.t0) + (t - it.t0)) * group;
  }

  // Key tile [jt, jt + kKeyTile) of chunk [ks, ke) for the item's rows that see any of its keys.
  void tile(const AttentionJob& J, const AttentionItem& it, int64_t jt, int64_t ks, int64_t ke, ThreadBuf& b,
            const RowStates& st) const {
    int64_t ta = -1, tb = -1;  // tokens meeting the tile: an interval (their key ranges only move right)
    for (int64_t t = it.t0; t < it.t1; ++t) {
      const auto [lo, hi] = keys_of(J, t, ks, ke);
      if (std::max(lo, jt) < std::min(hi, jt + kKeyTile)) {
        if (ta < 0) ta = t;
        tb = t + 1;
      }
    }
    if (ta < 0) return;
    const int a = static_cast<int>(std::max(ks, jt) - jt),
              bb = static_cast<int>(std::min(ke, jt + kKeyTile) - jt);
    tile_groups(J.kv, jt, a, bb, b.kgroups, b.vgroups);
    const Tile tl{J, it, jt, ks, ke, a, bb, ta, tb};
    if (it.h1 - it.h0 > 1)
      tile_in_memory_order(tl, b, st);
    else
      tile_by_head(tl, b, st);
  }

  // A tile as seen by an item: columns [a, b) in its chunk [ks, ke), rows of tokens [ta, tb).
  struct Tile {
    const AttentionJob& J;
    const AttentionItem& it;
    int64_t jt, ks, ke;
    int a, b;
    int64_t ta, tb;
  };

  // Gemma 2's soft-capping of nr rows of scores (the columns the mask drops included: it drops them).
  void softcap(float* s, int nr) const {
    if (p.softcap <= 0) return;
    for (int64_t i = 0; i < static_cast<int64_t>(nr) * kKeyTile; ++i)
      s[i] = p.softcap * std::tanh(s[i] / p.softcap);
  }

  // Scores of keys outside each token's range (head hk's rows) become -inf.
  void mask(const Tile& tl, int hk, ThreadBuf& b) const {
    for (int64_t t = tl.ta; t < tl.tb; ++t) {
      const auto [lo, hi] = keys_of(tl.J, t, tl.ks, tl.ke);
      const int64_t ca = std::clamp<int64_t>(lo - tl.jt, 0, kKeyTile),
                    cb = std::clamp<int64_t>(hi - tl.jt, 0, kKeyTile);
      if (ca == 0 && cb == kKeyTile) continue;
      for (int g = 0; g < group; ++g) {
        float* r = b.s + (row(tl.it, hk, t) + g) * kKeyTile;
        std::fill(r, r + ca, -INFINITY);
        std::fill(r + cb, r + kKeyTile, -INFINITY);
      }
    }
  }

  // Many rows of one head: keys and values converted once into buffers and used by every row
  // (INT8: integer dot products and sums group by group, as in tile_in_memory_order).
  void tile_by_head(const Tile& tl, ThreadBuf& b, const RowStates& st) const {
    const int hk = tl.it.h0;
    const int64_t r0 = row(tl.it, hk, tl.ta);
    const int nr = static_cast<int>((tl.tb - tl.ta) * group);
    const KvType type = tl.J.kv.type;
    if (type == KvType::INT8) {
      for (int g = 0; g < kTileGroups; ++g)
        if (b.kgroups[g])
          ops.scores_group(b.rows(hd, true).from(r0), nr, b.kgroups[g], type, hk, p.n_head_kv, hd, p.scale,
                           b.s + r0 * kKeyTile + kKvGroup * g);
    } else {
      ops.load_keys(b.kgroups, tl.a, tl.b, type, hk, p.n_head_kv, hd, b.kt);
      ops.scores(b.q + r0 * hd, nr, b.kt, hd, p.scale, b.s + r0 * kKeyTile);
    }
    softcap(b.s + r0 * kKeyTile, nr);
    mask(tl, hk, b);
    ops.softmax_step(b.s + r0 * kKeyTile, nr, st.m + r0, st.l + r0, b.c + r0);
    float* acc = st.acc + r0 * hd;
    if (nr <= kRowsFromCache || type == KvType::INT8) {
      ops.accumulate_rows(b.s + r0 * kKeyTile, nr, b.vgroups, tl.a, tl.b, type, hk, p.n_head_kv, hd, b.c + r0,
                          acc);
    } else {
      ops.load_values(b.vgroups, tl.a, tl.b, type, hk, p.n_head_kv, hd, b.vt);
      ops.accumulate(b.s + r0 * kKeyTile, nr, b.vt, tl.b, hd, b.c + r0, acc);
    }
  }

  // Few rows of every head (a decode): the cache is read in its memory order, group by group and
  // head by head within a group, so K and V stream; each row's arithmetic is that of tile_by_head.
  void tile_in_memory_order(const Tile& tl, ThreadBuf& b, const RowStates& st) const {
    const int nr = static_cast<int>((tl.tb - tl.ta) * group);
    const KvType type = tl.J.kv.type;
    const QueryRows rows = b.rows(hd, type == KvType::INT8);
    for (int g = 0; g < kTileGroups; ++g) {
      if (!b.kgroups[g]) continue;
      for (int hk = tl.it.h0; hk < tl.it.h1; ++hk) {
        const int64_t r0 = row(tl.it, hk, tl.ta);
        ops.scores_group(rows.from(r0), nr, b.kgroups[g], type, hk, p.n_head_kv, hd, p.scale,
                         b.s + r0 * kKeyTile + kKvGroup * g);
      }
    }
    for (int hk = tl.it.h0; hk < tl.it.h1; ++hk) {
      const int64_t r0 = row(tl.it, hk, tl.ta);
      softcap(b.s + r0 * kKeyTile, nr);
      mask(tl, hk, b);
      ops.softmax_step(b.s + r0 * kKeyTile, nr, st.m + r0, st.l + r0, b.c + r0);
    }
    bool first = true;  // the running outputs are rescaled before the tile's first value
    for (int g = 0; g < kTileGroups; ++g) {
      if (!b.vgroups[g]) continue;
      const int ga = std::max(tl.a, kKvGroup * g), gb = std::min(tl.b, kKvGroup * (g + 1));
      for (int hk = tl.it.h0; hk < tl.it.h1; ++hk) {
        const int64_t r0 = row(tl.it, hk, tl.ta);
        ops.accumulate_rows(b.s + r0 * kKeyTile, nr, b.vgroups, ga, gb, type, hk, p.n_head_kv, hd,
                            first ? b.c + r0 : nullptr, st.acc + r0 * hd);
      }
      first = false;
    }
  }

  // An item: its chunks in order, each computed on its own and merged (or stored as a partial).
  void run(const AttentionJob& J, const AttentionItem& it, ThreadBuf& b, float* partials, size_t slot) const {
    const int R = rows_of(it);
    for (int hk = it.h0; hk < it.h1; ++hk)
      for (int64_t t = it.t0; t < it.t1; ++t)
        std::copy_n(J.q + t * J.ldq + static_cast<int64_t>(hk) * group * hd, group * hd,
                    b.q + row(it, hk, t) * hd);
    if (J.kv.type == KvType::INT8) quantize_query_rows(b.q, R, hd, b.q8, b.qs, b.q8sum);
    b.merged.clear(R, hd);
    const int64_t jlo = first_key(p, J.pos0 + it.t0), jhi = J.pos0 + (p.causal ? it.t1 : J.n_tok);
    for (int64_t c = it.c0; c < it.c1; ++c) {
      const int64_t ks = std::max(jlo, c * kAttentionChunk), ke = std::min(jhi, (c + 1) * kAttentionChunk);
      RowStates st = b.chunk;
      if (it.partial >= 0) {  // the chunk's state goes straight to its slot
        float* o = partials + slot * it.partial;
        st = RowStates::at(o, R);
      }
      st.clear(R, hd);
      for (int64_t jt = ks / kKeyTile * kKeyTile; jt < ke; jt += kKeyTile) tile(J, it, jt, ks, ke, b, st);
      if (it.partial >= 0) return;
      merge_states(R, hd, st, b.merged);
    }
    write_output(J, it, b.merged);
  }

  int rows_of(const AttentionItem& it) const {
    return static_cast<int>((it.h1 - it.h0) * (it.t1 - it.t0) * group);
  }

  // Writes the merged rows of an item, normalised, into the job's output. A sink s joins the
  // denominator: with M = max(m, s), out = acc e^(m - M) / (l e^(m - M) + e^(s - M)).
  void write_output(const AttentionJob& J, const AttentionItem& it, const RowStates& st) const {
    for (int hk = it.h0; hk < it.h1; ++hk)
      for (int64_t t = it.t0; t < it.t1; ++t)
        for (int g = 0; g < group; ++g) {
          const int64_t r = row(it, hk, t) + g;
          const int64_t head = static_cast<int64_t>(hk) * group + g;
          float* out = J.out + t * J.ldo + head * hd;
          if (!p.sinks) {
            for (int i = 0; i < hd; ++i) out[i] = st.acc[r * hd + i] / st.l[r];
            continue;
          }
          const float m = std::max(st.m[r], p.sinks[head]), f = std::exp(st.m[r] - m);
          const float l = st.l[r] * f + std::exp(p.sinks[head] - m);
          for (int i = 0; i < hd; ++i) out[i] = st.acc[r * hd + i] * f / l;
        }
  }
};

// The key chunks [c0, c1) that query tokens [t0, t1) of a job see.
std::pair<int64_t, int64_t> chunks_of(const AttentionParams& p, const AttentionJob& J, int64_t t0,
                                      int64_t t1) {
  const int64_t end = J.pos0 + (p.causal ? t1 : J.n_tok);
  return {first_key(p, J.pos0 + t0) / kAttentionChunk, (end - 1) / kAttentionChunk + 1};
}

constexpr int64_t kDecodeTokens = 4;  // jobs this short read whole K/V rows: all heads in one item

// Work items. A prompt chunk: its query blocks (last, longest, first) x KV heads, each reading its
// head's slices of the K/V rows. A decode (or a short verify chunk): all heads at once, so whole rows
// stream from memory, its key chunks split into items of their own (merged afterwards) and its heads
// into groups when that is needed to give every thread work. When prompt items are few, their key
// chunks are split the same way.
void plan_items(const AttentionParams& p, const AttentionJob* jobs, int n_jobs, int n_threads,
                AttentionScratch& sc) {
  sc.items.clear();
  sc.merges.clear();
  int64_t base = 0, decode_chunks = 0;
  for (int i = 0; i < n_jobs; ++i) {
    const AttentionJob& J = jobs[i];
    if (J.n_tok <= kDecodeTokens) {
      const auto [c0, c1] = chunks_of(p, J, 0, J.n_tok);
      decode_chunks += c1 - c0;
    } else {
      base += (J.n_tok + kQueryBlock - 1) / kQueryBlock * p.n_head_kv;
    }
  }
  const bool split = base + decode_chunks < 4 * static_cast<int64_t>(n_threads);
  const int64_t want = 2 * static_cast<int64_t>(n_threads);
  const int head_groups =
      base > 0 || decode_chunks >= want
          ? 1
          : static_cast<int>(std::min<int64_t>(p.n_head_kv, (want + decode_chunks - 1) / decode_chunks));
  int64_t slots = 0;
  auto add = [&](int job, int h0, int h1, int64_t t0, int64_t t1, int64_t c0, int64_t c1, bool split_chunks) {
    if (!split_chunks || c1 - c0 == 1) {
      sc.items.push_back({job, h0, h1, t0, t1, c0, c1, -1});
      return;
    }
    sc.merges.push_back({job, h0, h1, t0, t1, c0, c1, slots});
    for (int64_t c = c0; c < c1; ++c) sc.items.push_back({job, h0, h1, t0, t1, c, c + 1, slots++});
  };
  for (int i = 0; i < n_jobs; ++i) {
    const AttentionJob& J = jobs[i];
    const int64_t qb = J.n_tok <= kDecodeTokens ? J.n_tok : kQueryBlock;
    for (int64_t blk = (J.n_tok + qb - 1) / qb - 1; blk >= 0; --blk) {
      const int64_t t0 = blk * qb, t1 = std::min(J.n_tok, t0 + qb);
      const auto [c0, c1] = chunks_of(p, J, t0, t1);
      if (J.n_tok <= kDecodeTokens) {
        for (int g = 0; g < head_groups; ++g)
          add(i, p.n_head_kv * g / head_groups, p.n_head_kv * (g + 1) / head_groups, t0, t1, c0, c1, true);
      } else {
        for (int hk = 0; hk < p.n_head_kv; ++hk) add(i, hk, hk + 1, t0, t1, c0, c1, split);
      }
    }
  }
}

// Runs fn(item index, thread) over n items, claimed dynamically.
template <typename F>
void for_each_item(ThreadPool& pool, size_t n, F&& fn) {
  std::atomic<size_t> next{0};
  auto work = [&](int ith, int) {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      fn(i, ith);
  };
  if (n <= 1)
    work(0, 1);
  else
    pool.run(work);
}

}  // namespace

void attention(const AttentionParams& p, const AttentionJob* jobs, int n_jobs, ThreadPool& pool,
               AttentionScratch& sc) {
  if (p.head_dim > kMaxHeadDim) fail("attention: head size {} is more than {}", p.head_dim, kMaxHeadDim);
  if (!p.causal && p.sliding_window > 0) fail("attention: a sliding window needs causal attention");
  const int group = p.n_head / p.n_head_kv, hd = p.head_dim;
  const ItemRunner runner{p, attention_tile_ops(hd), group, hd};
  plan_items(p, jobs, n_jobs, pool.size(), sc);
  int R = 0;  // rows of the largest item
  for (const AttentionItem& it : sc.items) R = std::max(R, runner.rows_of(it));
  const size_t per_thread = ThreadBuf::floats(R, hd), slot = static_cast<size_t>(R) * (hd + 2);
  const size_t n_threads = static_cast<size_t>(pool.size());
  if (sc.buf.size() < per_thread * n_threads) sc.buf.resize(per_thread * n_threads);
  const size_t ints_per_thread = ThreadBuf::ints(R, hd);
  if (sc.ints.size() < ints_per_thread * n_threads) sc.ints.resize(ints_per_thread * n_threads);
  if (sc.groups.size() < 2 * kTileGroups * n_threads) sc.groups.resize(2 * kTileGroups * n_threads);
  size_t slots = 0;
  for (const AttentionItem& m : sc.merges) slots += m.c1 - m.c0;
  if (sc.partials.size() < slots * slot) sc.partials.resize(slots * slot);

  auto buf_of = [&](int ith) {
    return ThreadBuf(sc.buf.data() + per_thread * ith, sc.ints.data() + ints_per_thread * ith,
                     sc.groups.data() + 2 * kTileGroups * ith, R, hd);
  };
  for_each_item(pool, sc.items.size(), [&](size_t i, int ith) {
    ThreadBuf b = buf_of(ith);
    const AttentionItem& it = sc.items[i];
    runner.run(jobs[it.job], it, b, sc.partials.data(), slot);
  });
  for_each_item(pool, sc.merges.size(), [&](size_t i, int ith) {
    ThreadBuf b = buf_of(ith);
    const AttentionItem& m = sc.merges[i];
    const int rows = runner.rows_of(m);
    b.merged.clear(rows, hd);
    for (int64_t c = 0; c < m.c1 - m.c0; ++c) {
      float* o = sc.partials.data() + slot * (m.partial + c);
      merge_states(rows, hd, RowStates::at(o, rows), b.merged);
    }
    runner.write_output(jobs[m.job], m, b.merged);
  });
}

}  // namespace ferrum::kernels
