#include "runtime/kv_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/fail.h"

namespace ferrum::runtime {
namespace {

// Bytes of memory available to this process now (MemAvailable), or 0 if unknown.
size_t available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

}  // namespace

KvCache::KvCache(int n_layer, int n_head_kv, int head_dim, KvCacheOptions opts)
    : n_layer_(n_layer), n_head_kv_(n_head_kv), head_dim_(head_dim), opts_(opts) {
  if (opts_.seq_capacity <= 0) fail("KV capacity must be positive, got {}", opts_.seq_capacity);
  if (opts_.block_tokens <= 0 || opts_.block_tokens % kernels::kKvGroup != 0)
    fail("KV block size must be a positive multiple of {}, got {}", kernels::kKvGroup, opts_.block_tokens);
  row_bytes_ = kernels::kv_row_bytes(opts_.type, n_head_kv, head_dim);
  if (opts_.pool_tokens <= 0) {
    // Default: room for pool_sequences full-length sequences, at most a quarter of the free memory.
    int64_t tokens = opts_.seq_capacity * std::max<int64_t>(1, opts_.pool_sequences);
    const size_t avail = available_memory();
    if (avail > 0 && bytes_per_token() > 0)  // an encoder's cache has no layers
      tokens = std::min<int64_t>(tokens, static_cast<int64_t>(avail / 4 / bytes_per_token()));
    opts_.pool_tokens = std::max<int64_t>(tokens, opts_.seq_capacity);
  }
  if (opts_.layout == KvLayout::Paged) {
    const int64_t n_blocks = (opts_.pool_tokens + opts_.block_tokens - 1) / opts_.block_tokens;
    if (n_blocks > INT32_MAX) fail("KV pool of {} tokens is too large", opts_.pool_tokens);
    block_bytes_ = row_bytes_ * opts_.block_tokens;
    alloc_ = BlockAllocator(static_cast<int32_t>(n_blocks));
    k_pool_.resize(n_layer);
    v_pool_.resize(n_layer);
    for (int l = 0; l < n_layer; ++l) {
      k_pool_[l].reset(static_cast<uint8_t*>(alloc_huge(n_blocks * block_bytes_)));
      v_pool_[l].reset(static_cast<uint8_t*>(alloc_huge(n_blocks * block_bytes_)));
      if (!k_pool_[l] || !v_pool_[l])
        fail("out of memory for a KV pool of {} tokens ({} bytes per layer)", opts_.pool_tokens,
             2 * n_blocks * block_bytes_);
    }
  } else {
    opts_.prefix_cache = false;  // needs shared blocks
    block_bytes_ = row_bytes_ * opts_.seq_capacity;
    max_contiguous_seqs_ = std::max<int64_t>(1, opts_.pool_tokens / opts_.seq_capacity);
  }
}

KvCache::Seq& KvCache::get(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("unknown sequence {}", seq);
  return it->second;
}

const KvCache::Seq& KvCache::get(int seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("unknown sequence {}", seq);
  return it->second;
}

int64_t KvCache::len(int seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : static_cast<int64_t>(it->second.tokens.size());
}

int32_t KvCache::blocks_needed(const Seq* s, int64_t new_len) const {
  const int64_t bt = opts_.block_tokens;
  const int64_t have = s ? static_cast<int64_t>(s->table.size()) : 0;
  int64_t need = std::max<int64_t>(0, (new_len + bt - 1) / bt - have);
  // Copy-on-write of a shared, partly filled last block.
  if (s && new_len > static_cast<int64_t>(s->tokens.size())) {
    const int64_t len = s->tokens.size();
    if (len % bt != 0 && alloc_.refcount(s->table[len / bt]) > 1) ++need;
  }
  return static_cast<int32_t>(need);
}

bool KvCache::can_reserve(std::span<const std::pair<int, int64_t>> requests) const {
  int64_t need = 0, new_seqs = 0;
  for (const auto& [seq, new_len] : requests) {
    if (new_len > opts_.seq_capacity) return false;
    auto it = seqs_.find(seq);
    const Seq* s = it == seqs_.end() ? nullptr : &it->second;
    if (!s) ++new_seqs;
    if (opts_.layout == KvLayout::Paged) need += blocks_needed(s, new_len);
  }
  if (opts_.layout == KvLayout::Contiguous)
    return static_cast<int64_t>(seqs_.size()) + new_seqs <= max_contiguous_seqs_;
  return need <= alloc_.free_count() + prefix_.evictable();
}

void KvCache::reserve(std::span<const std::pair<int, int64_t>> requests) {
  int64_t need = 0, new_seqs = 0;
  for (const auto& [seq, new_len] : requests) {
    if (new_len > opts_.seq_capacity)
      throw CapacityError(
          fmt::format("sequence {}: {} tokens exceed the KV capacity of {} tokens per sequence", seq, new_len,
                      opts_.seq_capacity));
    auto it = seqs_.find(seq);
    const Seq* s = it == seqs_.end() ? nullptr : &it->second;
    if (!s) ++new_seqs;
    if (opts_.layout == KvLayout::Paged) need += blocks_needed(s, new_len);
  }
  if (opts_.layout == KvLayout::Contiguous) {
    if (static_cast<int64_t>(seqs_.size()) + new_seqs > max_contiguous_seqs_)
      throw CapacityError(
          fmt::format("KV cache is full: {} sequences of {} tokens already held (pool of {} tokens)",
                      seqs_.size(), opts_.seq_capacity, opts_.pool_tokens));
  } else if (!prefix_.make_free(static_cast<int32_t>(need))) {
    throw CapacityError(fmt::format("KV pool exhausted: {} more blocks of {} tokens needed, {} free", need,
                                    opts_.block_tokens, alloc_.free_count()));
  }
  for (const auto& [seq, new_len] : requests) {
    Seq& s = seqs_[seq];
    if (opts_.layout == KvLayout::Contiguous) {
      if (s.table.empty()) {
        s.table.push_back(0);
        s.k.resize(n_layer_);
        s.v.resize(n_layer_);
      }
      if (new_len > s.reserved) {
        const int64_t rows =
            std::min<int64_t>(opts_.seq_capacity, std::max<int64_t>(new_len, s.reserved * 2));
        const int64_t groups = (rows + kernels::kKvGroup - 1) / kernels::kKvGroup;  // whole groups
        for (int l = 0; l < n_layer_; ++l) {
          s.k[l].resize(groups * kernels::kKvGroup * row_bytes_);
          s.v[l].resize(groups * kernels::kKvGroup * row_bytes_);
        }
        s.reserved = rows;
      }
      continue;
    }
    const int64_t len = s.tokens.size();
    if (new_len > len && len % opts_.block_tokens != 0) make_writable(s, len);
    const int64_t bt = opts_.block_tokens;
    const int32_t more = static_cast<int32_t>(
        std::max<int64_t>(0, (new_len + bt - 1) / bt - static_cast<int64_t>(s.table.size())));
    const bool ok = alloc_.allocate(more, s.table);
    FERRUM_ASSERT(ok, "block allocation failed after the free check");
    s.reserved = static_cast<int64_t>(s.table.size()) * bt;
  }
}

void KvCache::make_writable(Seq& s, int64_t pos) {
  const int64_t bi = pos / opts_.block_tokens;
  const int32_t old = s.table[bi];
  if (alloc_.refcount(old) == 1) return;
  std::vector<int32_t> fresh;
  const bool ok = alloc_.allocate(1, fresh);
  FERRUM_ASSERT(ok, "no block for copy-on-write");
  for (int l = 0; l < n_layer_; ++l) {
    std::memcpy(k_pool_[l].get() + fresh[0] * block_bytes_, k_pool_[l].get() + old * block_bytes_,
                block_bytes_);
    std::memcpy(v_pool_[l].get() + fresh[0] * block_bytes_, v_pool_[l].get() + old * block_bytes_,
                block_bytes_);
  }
  alloc_.decref(old);
  s.table[bi] = fresh[0];
}

uint8_t* KvCache::group_ptr(int layer, bool is_k, Seq& s, int64_t pos) {
  const size_t group_bytes = kernels::kKvGroup * row_bytes_;
  if (opts_.layout == KvLayout::Contiguous)
    return (is_k ? s.k : s.v)[layer].data() + pos / kernels::kKvGroup * group_bytes;
  const int64_t bt = opts_.block_tokens;
  uint8_t* pool = (is_k ? k_pool_ : v_pool_)[layer].get();
  return pool + s.table[pos / bt] * block_bytes_ + (pos % bt) / kernels::kKvGroup * group_bytes;
}

void KvCache::write(int layer, int seq, int64_t pos, const float* k, const float* v) {
  Seq& s = get(seq);
  FERRUM_ASSERT(pos < s.reserved, "write at position {} of sequence {} beyond its {} reserved rows", pos, seq,
                s.reserved);
  store(layer, s, pos, k, v);
}

void KvCache::store(int layer, Seq& s, int64_t pos, const float* k, const float* v) {
  const int i = static_cast<int>(pos % kernels::kKvGroup);
  kernels::kv_store_key(opts_.type, k, group_ptr(layer, true, s, pos), i, n_head_kv_, head_dim_);
  kernels::kv_store_value(opts_.type, v, group_ptr(layer, false, s, pos), i, n_head_kv_, head_dim_);
}

void KvCache::write_rows(int layer, std::span<const Rows> batch, ThreadPool& pool) {
  // Each token's sequence and row, so the threads share the batch's tokens evenly.
  struct Token {
    Seq* s;
    const Rows* rows;
    int64_t t;
  };
  thread_local std::vector<Token> tokens;
  tokens.clear();
  for (const Rows& r : batch) {
    Seq& s = get(r.seq);
    for (int64_t t = 0; t < r.n; ++t) {
      FERRUM_ASSERT(r.pos[t] < s.reserved, "write at position {} of sequence {} beyond its {} reserved rows",
                    r.pos[t], r.seq, s.reserved);
      tokens.push_back({&s, &r, t});
    }
  }
  const std::vector<Token>& all = tokens;  // the workers see the caller's list
  auto store_range = [&](int64_t b, int64_t e, int) {
    for (int64_t j = b; j < e; ++j) {
      const Token& tk = all[j];
      // Tokens of one group write disjoint slots of it (their own rows and scales).
      store(layer, *tk.s, tk.rows->pos[tk.t], tk.rows->k + tk.t * tk.rows->stride,
            tk.rows->v + tk.t * tk.rows->stride);
    }
  };
  // A few tokens (a decode step of one sequence) cost less than waking the workers.
  const int64_t n = static_cast<int64_t>(all.size());
  if (n < 4)
    store_range(0, n, 0);
  else
    pool.parallel_for(n, store_range);
}

uint64_t KvCache::ns(int seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.ns;
}

void KvCache::append(int seq, std::span<const int32_t> ids, uint64_t ns) {
  Seq& s = get(seq);
  if (s.tokens.empty())
    s.ns = s.chain = ns;
  else if (s.ns != ns)
    fail("append: sequence {} continues in another prefix namespace (LoRA adapter) than it started in", seq);
  FERRUM_ASSERT(static_cast<int64_t>(s.tokens.size() + ids.size()) <= s.reserved,
                "append beyond reserved rows");
  s.tokens.insert(s.tokens.end(), ids.begin(), ids.end());
  if (opts_.prefix_cache) register_blocks(s);
}

void KvCache::register_blocks(Seq& s) {
  const int bt = opts_.block_tokens;
  while (static_cast<int64_t>(s.registered + 1) * bt <= static_cast<int64_t>(s.tokens.size())) {
    const int32_t* block_ids = s.tokens.data() + s.registered * bt;
    if (std::any_of(block_ids, block_ids + bt, [](int32_t id) { return id < 0; })) return;  // input rows
    s.chain = prefix_.offer(s.chain, block_ids, bt, s.table[s.registered]);
    ++s.registered;
  }
}

int64_t KvCache::reuse_prefix(int seq, std::span<const int32_t> prompt, uint64_t ns) {
  if (!opts_.prefix_cache || prompt.size() < 2) return 0;
  if (len(seq) != 0) fail("reuse_prefix: sequence {} is not empty", seq);
  const int bt = opts_.block_tokens;
  const int64_t max_blocks = static_cast<int64_t>(prompt.size() - 1) / bt;
  Seq& s = seqs_[seq];
  uint64_t chain = ns;
  int64_t n = 0;
  for (; n < max_blocks; ++n) {
    const PrefixCache::Hit hit = prefix_.find(chain, prompt.data() + n * bt, bt);
    if (hit.block < 0) break;
    alloc_.incref(hit.block);
    s.table.push_back(hit.block);
    chain = hit.hash;
  }
  s.tokens.assign(prompt.begin(), prompt.begin() + n * bt);
  s.reserved = n * bt;
  s.registered = static_cast<int>(n);
  s.chain = chain;
  s.ns = ns;
  prefix_.count(n * bt);
  return n * bt;
}

void KvCache::truncate(int seq, int64_t new_len) {
  Seq& s = get(seq);
  const int64_t len = s.tokens.size();
  if (new_len < 0 || new_len > len)
    fail("truncate_kv: sequence {} has {} tokens, cannot truncate to {}", seq, len, new_len);
  s.tokens.resize(new_len);
  if (opts_.layout == KvLayout::Paged) {
    const int64_t bt = opts_.block_tokens;
    const size_t keep = static_cast<size_t>((new_len + bt - 1) / bt);
    while (s.table.size() > keep) {
      alloc_.decref(s.table.back());
      s.table.pop_back();
    }
    s.reserved = static_cast<int64_t>(s.table.size()) * bt;
    if (s.registered > new_len / bt) {
      s.registered = 0;
      s.chain = s.ns;
      // Recompute the chain of the blocks that stay registered.
      for (int64_t b = 0; b < new_len / bt; ++b)
        s.chain = PrefixCache::chain_hash(s.chain, s.tokens.data() + b * bt, static_cast<int>(bt));
      s.registered = static_cast<int>(new_len / bt);
    }
  }
}

void KvCache::release(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("release: unknown sequence {}", seq);
  if (opts_.layout == KvLayout::Paged)
    for (int32_t b : it->second.table) alloc_.decref(b);
  seqs_.erase(it);
}

void KvCache::reset() {
  while (!seqs_.empty()) release(seqs_.begin()->first);
  prefix_.clear();
}

kernels::KvSeqView KvCache::view(int layer, int seq) const {
  const Seq& s = get(seq);
  kernels::KvSeqView v;
  v.table = s.table.data();
  v.row_bytes = row_bytes_;
  v.type = opts_.type;
  if (opts_.layout == KvLayout::Contiguous) {
    v.k_base = s.k[layer].data();
    v.v_base = s.v[layer].data();
    v.block_tokens = std::max<int64_t>(s.reserved, 1);
    v.block_bytes = 0;  // table = {0}
  } else {
    v.k_base = k_pool_[layer].get();
    v.v_base = v_pool_[layer].get();
    v.block_tokens = opts_.block_tokens;
    v.block_bytes = block_bytes_;
  }
  return v;
}

KvUsage KvCache::stats() const {
  KvUsage st;
  st.seq_capacity = opts_.seq_capacity;
  st.bytes_per_token = bytes_per_token();
  st.sequences = seqs_.size();
  for (const auto& [id, s] : seqs_) st.used_tokens += s.tokens.size();
  if (opts_.layout == KvLayout::Paged) {
    st.block_tokens = opts_.block_tokens;
    st.total_blocks = alloc_.total();
    st.free_blocks = alloc_.free_count() + prefix_.evictable();
    st.pool_bytes = static_cast<size_t>(alloc_.total()) * block_bytes_ * 2 * n_layer_;
  } else {
    st.block_tokens = opts_.seq_capacity;
    st.total_blocks = max_contiguous_seqs_;
    st.free_blocks = max_contiguous_seqs_ - static_cast<int64_t>(seqs_.size());
    st.pool_bytes = static_cast<size_t>(max_contiguous_seqs_) * opts_.seq_capacity * bytes_per_token();
  }
  st.prefix_hits = prefix_.hits();
  st.prefix_misses = prefix_.misses();
  st.prefix_saved_tokens = prefix_.saved_tokens();
  st.prefix_entries = prefix_.entries();
  st.prefix_bytes = static_cast<size_t>(prefix_.entries()) * block_bytes_ * 2 * n_layer_;
  return st;
}

}  // namespace ferrum::runtime
