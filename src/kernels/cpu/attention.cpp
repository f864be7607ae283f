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
  void clear(int R, int hd) const {
    std::fill_n(m, R, -INFINITY);
    std::fill_n(l, R, 0.0f);
    std::fill_n(acc, static_cast<size_t>(R) * hd, 0.0f);
  }
};

// One thread's buffers (floats, sized for the call's largest item).
struct ThreadBuf {
  float *q, *kt, *vt, *s, *c;
  RowStates chunk, merged;
  const uint8_t** krows;
  const uint8_t** vrows;
  static size_t floats(int64_t R, int hd) {
    return R * hd + 2 * kKeyTile * hd + R * kKeyTile + R + 2 * (2 * R + R * hd);
  }
  ThreadBuf(float* f, const uint8_t** rows, int64_t R, int hd) {
    q = f;
    kt = q + R * hd;
    vt = kt + kKeyTile * hd;
    s = vt + kKeyTile * hd;
    c = s + R * kKeyTile;
    chunk = {c + R, c + 2 * R, c + 3 * R};
    merged = {chunk.acc + R * hd, chunk.acc + R * hd + R, chunk.acc + R * hd + 2 * R};
    krows = rows;
    vrows = rows + kKeyTile;
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

// Writes the merged rows of an item, normalised, into the job's output.
void write_output(const AttentionParams& p, const AttentionJob& J, const AttentionItem& it,
                  const RowStates& st) {
  const int group = p.n_head / p.n_head_kv, hd = p.head_dim;
  for (int64_t t = it.t0; t < it.t1; ++t)
    for (int g = 0; g < group; ++g) {
      const int64_t r = (t - it.t0) * group + g;
      float* out = J.out + t * J.ldo + (static_cast<int64_t>(it.hk) * group + g) * hd;
      const float l = st.l[r];
      for (int i = 0; i < hd; ++i) out[i] = st.acc[r * hd + i] / l;
    }
}

// Pointers to the K and V rows of tile columns [a, b) (key jt + column), walking the block table.
void tile_rows(const KvSeqView& kv, int64_t jt, int a, int b, const uint8_t** kr, const uint8_t** vr) {
  int64_t blk = (jt + a) / kv.block_tokens, off = (jt + a) % kv.block_tokens;
  for (int i = a; i < b; ++i) {
    const size_t o =
        static_cast<size_t>(kv.table[blk]) * kv.block_bytes + static_cast<size_t>(off) * kv.row_bytes;
    kr[i] = kv.k_base + o;
    vr[i] = kv.v_base + o;
    if (++off == kv.block_tokens) off = 0, ++blk;
  }
}

struct ItemRunner {
  const AttentionParams& p;
  const AttentionTileOps& ops;
  int group, hd;

  // Keys token t sees within chunk [ks, ke).
  std::pair<int64_t, int64_t> keys_of(const AttentionJob& J, int64_t t, int64_t ks, int64_t ke) const {
    const int64_t pos = J.pos0 + t;
    return {std::max(first_key(p, pos), ks), std::min(pos + 1, ke)};
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
    tile_rows(J.kv, jt, a, bb, b.krows, b.vrows);
    ops.load_keys(b.krows, a, bb, J.kv.type, it.hk, p.n_head_kv, hd, b.kt);
    ops.load_values(b.vrows, a, bb, J.kv.type, it.hk, p.n_head_kv, hd, b.vt);
    const int r0 = static_cast<int>((ta - it.t0) * group), nr = static_cast<int>((tb - ta) * group);
    float* s = b.s + static_cast<size_t>(r0) * kKeyTile;
    ops.scores(b.q + static_cast<size_t>(r0) * hd, nr, b.kt, hd, p.scale, s);
    for (int64_t t = ta; t < tb; ++t) {  // mask keys outside each token's range
      const auto [lo, hi] = keys_of(J, t, ks, ke);
      const int64_t ca = std::clamp<int64_t>(lo - jt, 0, kKeyTile),
                    cb = std::clamp<int64_t>(hi - jt, 0, kKeyTile);
      if (ca == 0 && cb == kKeyTile) continue;
      for (int g = 0; g < group; ++g) {
        float* row = s + ((t - ta) * group + g) * kKeyTile;
        std::fill(row, row + ca, -INFINITY);
        std::fill(row + cb, row + kKeyTile, -INFINITY);
      }
    }
    ops.softmax_step(s, nr, st.m + r0, st.l + r0, b.c + r0);
    ops.accumulate(s, nr, b.vt, bb, hd, b.c + r0, st.acc + static_cast<size_t>(r0) * hd);
  }

  // An item: its chunks in order, each computed on its own and merged (or stored as a partial).
  void run(const AttentionJob& J, const AttentionItem& it, ThreadBuf& b, float* partials, size_t slot) const {
    const int R = static_cast<int>((it.t1 - it.t0) * group);
    for (int64_t t = it.t0; t < it.t1; ++t)
      for (int g = 0; g < group; ++g)
        std::copy_n(J.q + t * J.ldq + (static_cast<int64_t>(it.hk) * group + g) * hd, hd,
                    b.q + ((t - it.t0) * group + g) * hd);
    b.merged.clear(R, hd);
    const int64_t jlo = first_key(p, J.pos0 + it.t0), jhi = J.pos0 + it.t1;
    for (int64_t c = it.c0; c < it.c1; ++c) {
      const int64_t ks = std::max(jlo, c * kAttentionChunk), ke = std::min(jhi, (c + 1) * kAttentionChunk);
      RowStates st = b.chunk;
      if (it.partial >= 0) {  // the chunk's state goes straight to its slot
        float* o = partials + slot * it.partial;
        st = {o, o + R, o + 2 * R};
      }
      st.clear(R, hd);
      for (int64_t jt = ks / kKeyTile * kKeyTile; jt < ke; jt += kKeyTile) tile(J, it, jt, ks, ke, b, st);
      if (it.partial >= 0) return;
      merge_states(R, hd, st, b.merged);
    }
    write_output(p, J, it, b.merged);
  }
};

// Work items: each job's query blocks (last, longest, first) x KV heads. When there are few of them
// (a decode at depth), a block's key chunks become items of their own, merged afterwards.
void plan_items(const AttentionParams& p, const AttentionJob* jobs, int n_jobs, int n_threads,
                AttentionScratch& sc) {
  sc.items.clear();
  sc.merges.clear();
  int64_t base = 0;
  for (int i = 0; i < n_jobs; ++i) base += (jobs[i].n_tok + kQueryBlock - 1) / kQueryBlock * p.n_head_kv;
  const bool split = base < 4 * static_cast<int64_t>(n_threads);
  int64_t slots = 0;
  for (int i = 0; i < n_jobs; ++i) {
    const AttentionJob& J = jobs[i];
    for (int64_t blk = (J.n_tok + kQueryBlock - 1) / kQueryBlock - 1; blk >= 0; --blk) {
      const int64_t t0 = blk * kQueryBlock, t1 = std::min(J.n_tok, t0 + kQueryBlock);
      const int64_t c0 = first_key(p, J.pos0 + t0) / kAttentionChunk,
                    c1 = (J.pos0 + t1 - 1) / kAttentionChunk + 1;
      for (int hk = 0; hk < p.n_head_kv; ++hk) {
        if (!split || c1 - c0 == 1) {
          sc.items.push_back({i, hk, t0, t1, c0, c1, -1});
          continue;
        }
        sc.merges.push_back({i, hk, t0, t1, c0, c1, slots});
        for (int64_t c = c0; c < c1; ++c) sc.items.push_back({i, hk, t0, t1, c, c + 1, slots++});
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
  const int group = p.n_head / p.n_head_kv, hd = p.head_dim;
  int64_t max_tok = 0;
  for (int i = 0; i < n_jobs; ++i) max_tok = std::max(max_tok, jobs[i].n_tok);
  const int64_t R = std::min(max_tok, kQueryBlock) * group;
  const size_t per_thread = ThreadBuf::floats(R, hd), slot = static_cast<size_t>(R) * (hd + 2);
  const size_t n_threads = static_cast<size_t>(pool.size());
  if (sc.buf.size() < per_thread * n_threads) sc.buf.resize(per_thread * n_threads);
  if (sc.rows.size() < 2 * kKeyTile * n_threads) sc.rows.resize(2 * kKeyTile * n_threads);
  plan_items(p, jobs, n_jobs, pool.size(), sc);
  size_t slots = 0;
  for (const AttentionItem& m : sc.merges) slots += m.c1 - m.c0;
  if (sc.partials.size() < slots * slot) sc.partials.resize(slots * slot);

  const ItemRunner runner{p, attention_tile_ops(hd), group, hd};
  auto buf_of = [&](int ith) {
    return ThreadBuf(sc.buf.data() + per_thread * ith, sc.rows.data() + 2 * kKeyTile * ith, R, hd);
  };
  for_each_item(pool, sc.items.size(), [&](size_t i, int ith) {
    ThreadBuf b = buf_of(ith);
    const AttentionItem& it = sc.items[i];
    runner.run(jobs[it.job], it, b, sc.partials.data(), slot);
  });
  for_each_item(pool, sc.merges.size(), [&](size_t i, int ith) {
    ThreadBuf b = buf_of(ith);
    const AttentionItem& m = sc.merges[i];
    const int rows = static_cast<int>((m.t1 - m.t0) * group);
    b.merged.clear(rows, hd);
    for (int64_t c = 0; c < m.c1 - m.c0; ++c) {
      float* o = sc.partials.data() + slot * (m.partial + c);
      merge_states(rows, hd, RowStates{o, o + rows, o + 2 * rows}, b.merged);
    }
    write_output(p, jobs[m.job], m, b.merged);
  });
}

}  // namespace ferrum::kernels
