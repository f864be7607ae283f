#include "runtime/kv_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <utility>

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
    : n_layer_(n_layer), n_head_kv_(n_head_kv), head_dim_(head_dim), opts_(std::move(opts)) {
  if (opts_.seq_capacity <= 0) fail("KV capacity must be positive, got {}", opts_.seq_capacity);
  if (opts_.block_tokens <= 0 || opts_.block_tokens % kernels::kKvGroup != 0)
    fail("KV block size must be a positive multiple of {}, got {}", kernels::kKvGroup, opts_.block_tokens);
  if (opts_.rollback_tokens < 0) fail("KV rollback must not be negative, got {}", opts_.rollback_tokens);
  if (!opts_.layer_windows.empty() && static_cast<int>(opts_.layer_windows.size()) != n_layer)
    fail("KV cache: {} layer windows for {} layers", opts_.layer_windows.size(), n_layer);
  row_bytes_ = kernels::kv_row_bytes(opts_.type, n_head_kv, head_dim);
  block_bytes_ = row_bytes_ * opts_.block_tokens;
  make_groups(opts_.layer_windows);
  if (opts_.pool_tokens <= 0) {
    // Default: room for pool_sequences full-length sequences, at most a quarter of the free memory.
    int64_t tokens = opts_.seq_capacity * std::max<int64_t>(1, opts_.pool_sequences);
    const size_t avail = available_memory(), per_token = effective_bytes_per_token();
    if (avail > 0 && per_token > 0)  // an encoder's cache has no layers
      tokens = std::min<int64_t>(tokens, static_cast<int64_t>(avail / 4 / per_token));
    opts_.pool_tokens = std::max<int64_t>(tokens, opts_.seq_capacity);
  }
  const int64_t bt = opts_.block_tokens;
  int64_t n_blocks = (opts_.pool_tokens + bt - 1) / bt;
  if (opts_.layout == KvLayout::Contiguous) {
    opts_.prefix_cache = false;  // needs shared blocks
    max_contiguous_seqs_ = std::max<int64_t>(1, opts_.pool_tokens / opts_.seq_capacity);
    n_blocks = max_contiguous_seqs_ * ((opts_.seq_capacity + bt - 1) / bt);  // the windowed groups'
  }
  if (n_blocks > INT32_MAX) fail("KV pool of {} tokens is too large", opts_.pool_tokens);
  // Every paged group gets as many blocks as group 0 would (address space: a windowed layer's
  // pages are touched only as its blocks are used, and freed blocks are handed out again first),
  // so the windowed groups never refuse what group 0 admits.
  const int64_t full_seqs = std::max<int64_t>(1, opts_.pool_tokens / opts_.seq_capacity);
  for (size_t g = 0; g < groups_.size(); ++g) {
    Group& G = groups_[g];
    if (!paged(static_cast<int>(g))) continue;
    allocs_[g] = BlockAllocator(static_cast<int32_t>(n_blocks));
    if (G.window > 0) G.keep_blocks = static_cast<int32_t>(full_seqs * (window_rows(G.window) / bt));
    for (size_t i = 0; i < G.layers.size(); ++i) {
      G.k_pool.emplace_back(static_cast<uint8_t*>(alloc_huge(n_blocks * block_bytes_)));
      G.v_pool.emplace_back(static_cast<uint8_t*>(alloc_huge(n_blocks * block_bytes_)));
      if (!G.k_pool.back() || !G.v_pool.back())
        fail("out of memory for a KV pool of {} tokens ({} bytes per layer)", opts_.pool_tokens,
             2 * n_blocks * block_bytes_);
    }
  }
  if (opts_.store && opts_.prefix_cache && paged(0))
    prefix_.set_on_evict([this](const PrefixCache::EntryView& e) { save_entry(e); });
  else
    opts_.store.reset();
}

KvCache::~KvCache() {
  if (opts_.store) prefix_.for_each([this](const PrefixCache::EntryView& e) { save_entry(e); });
}

void KvCache::make_groups(const std::vector<int32_t>& windows) {
  groups_.resize(1);
  layer_at_.resize(n_layer_);
  for (int l = 0; l < n_layer_; ++l) {
    int32_t w = windows.empty() ? 0 : windows[l];
    if (w < 0) fail("KV cache: layer {} has a negative window ({})", l, w);
    if (w + opts_.rollback_tokens >= opts_.seq_capacity) w = 0;  // the window holds every position anyway
    size_t g = 0;
    while (g < groups_.size() && groups_[g].window != w) ++g;
    if (g == groups_.size()) groups_.push_back(Group{w, {}, {}, {}, 0});
    layer_at_[l] = {static_cast<int>(g), static_cast<int>(groups_[g].layers.size())};
    groups_[g].layers.push_back(l);
  }
  allocs_.resize(groups_.size());
}

int64_t KvCache::window_rows(int32_t window, int64_t rollback, int64_t bt, int64_t capacity) {
  if (window <= 0) return capacity;
  // The window and the rollback, from a position anywhere in its block, and the block being filled.
  return std::min(capacity, ((window + rollback + bt - 1) / bt + 1) * bt);
}

// The bytes a position costs when sequences are long: a windowed layer's share is its window's.
size_t KvCache::effective_bytes_per_token() const {
  double bytes = 0;
  for (const Group& G : groups_) {
    const double share = static_cast<double>(window_rows(G.window)) / static_cast<double>(opts_.seq_capacity);
    bytes += 2.0 * row_bytes_ * G.layers.size() * std::min(1.0, share);
  }
  return static_cast<size_t>(std::ceil(bytes));
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

KvCache::Seq& KvCache::create(int seq) {
  Seq& s = seqs_[seq];
  if (s.tables.empty()) {
    s.tables.resize(groups_.size());
    s.dropped.assign(groups_.size(), 0);
    if (!paged(0)) {
      s.tables[0].push_back(0);
      s.k.resize(groups_[0].layers.size());
      s.v.resize(groups_[0].layers.size());
    }
  }
  return s;
}

int32_t KvCache::blocks_needed(const Seq* s, int g, int64_t new_len) const {
  const int64_t bt = opts_.block_tokens;
  const int64_t have = s ? static_cast<int64_t>(s->tables[g].size()) : 0;
  int64_t need = std::max<int64_t>(0, (new_len + bt - 1) / bt - have);
  // Copy-on-write of a shared, partly filled last block.
  if (s && new_len > static_cast<int64_t>(s->tokens.size())) {
    const int64_t len = s->tokens.size();
    if (len % bt != 0 && allocs_[g].refcount(s->tables[g][len / bt]) > 1) ++need;
  }
  return static_cast<int32_t>(need);
}

// The blocks of each group the requests need (into `need`); false when they do not fit, even with
// the unused prefix-cache blocks evicted.
bool KvCache::blocks_for(std::span<const std::pair<int, int64_t>> requests, std::vector<int64_t>& need) const {
  need.assign(groups_.size(), 0);
  int64_t new_seqs = 0;
  for (const auto& [seq, new_len] : requests) {
    auto it = seqs_.find(seq);
    const Seq* s = it == seqs_.end() ? nullptr : &it->second;
    if (!s) ++new_seqs;
    for (size_t g = 0; g < groups_.size(); ++g)
      if (paged(static_cast<int>(g))) need[g] += blocks_needed(s, static_cast<int>(g), new_len);
  }
  if (!paged(0) && static_cast<int64_t>(seqs_.size()) + new_seqs > max_contiguous_seqs_) return false;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (need[g] > allocs_[g].free_count() + prefix_.evictable(static_cast<int>(g))) return false;
  return true;
}

bool KvCache::can_reserve(std::span<const std::pair<int, int64_t>> requests) const {
  for (const auto& r : requests)
    if (r.second > opts_.seq_capacity) return false;
  thread_local std::vector<int64_t> need;
  return blocks_for(requests, need);
}

void KvCache::reserve(std::span<const std::pair<int, int64_t>> requests) {
  for (const auto& [seq, new_len] : requests)
    if (new_len > opts_.seq_capacity)
      throw CapacityError(
          fmt::format("sequence {}: {} tokens exceed the KV capacity of {} tokens per sequence", seq, new_len,
                      opts_.seq_capacity));
  thread_local std::vector<int64_t> need;
  if (!blocks_for(requests, need)) {
    if (!paged(0))
      throw CapacityError(
          fmt::format("KV cache is full: {} sequences of {} tokens already held (pool of {} tokens)",
                      seqs_.size(), opts_.seq_capacity, opts_.pool_tokens));
    throw CapacityError(fmt::format("KV pool exhausted: {} free blocks of {} tokens are not enough",
                                    allocs_[0].free_count(), opts_.block_tokens));
  }
  for (size_t g = 0; g < groups_.size(); ++g)  // room made by evicting unused prefix-cache blocks
    if (need[g] > 0) prefix_.make_free(static_cast<int>(g), static_cast<int32_t>(need[g]));
  for (const auto& [seq, new_len] : requests) grow(create(seq), new_len);
  peak_held_ = std::max(peak_held_, held_bytes());
}

// Storage for positions up to new_len (the room was checked).
void KvCache::grow(Seq& s, int64_t new_len) {
  const int64_t bt = opts_.block_tokens, len = s.tokens.size();
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const int g = static_cast<int>(gi);
    std::vector<int32_t>& table = s.tables[g];
    if (!paged(g)) {
      int64_t rows = s.reserved_rows;
      if (new_len > rows) {
        rows = std::min<int64_t>(opts_.seq_capacity, std::max<int64_t>(new_len, rows * 2));
        const int64_t groups = (rows + kernels::kKvGroup - 1) / kernels::kKvGroup;  // whole groups
        for (size_t l = 0; l < s.k.size(); ++l) {
          s.k[l].resize(groups * kernels::kKvGroup * row_bytes_);
          s.v[l].resize(groups * kernels::kKvGroup * row_bytes_);
        }
        contiguous_rows_ += rows - s.reserved_rows;
        s.reserved_rows = rows;
      }
      continue;
    }
    if (new_len > len && len % bt != 0) make_writable(s, g, len);
    const int32_t more = static_cast<int32_t>(
        std::max<int64_t>(0, (new_len + bt - 1) / bt - static_cast<int64_t>(table.size())));
    const bool ok = allocs_[g].allocate(more, table);
    FERRUM_ASSERT(ok, "block allocation failed after the free check");
  }
  s.reserved = rows_with_storage(s);
}

// Positions every layer has storage for: the private rows (contiguous group 0) and each paged
// group's blocks.
int64_t KvCache::rows_with_storage(const Seq& s) const {
  int64_t rows = paged(0) ? static_cast<int64_t>(s.tables[0].size()) * opts_.block_tokens : s.reserved_rows;
  for (size_t g = 1; g < groups_.size(); ++g)
    rows = std::min(rows, static_cast<int64_t>(s.tables[g].size()) * opts_.block_tokens);
  return rows;
}

void KvCache::make_writable(Seq& s, int g, int64_t pos) {
  const int64_t bi = pos / opts_.block_tokens;
  const int32_t old = s.tables[g][bi];
  if (allocs_[g].refcount(old) == 1) return;
  std::vector<int32_t> fresh;
  const bool ok = allocs_[g].allocate(1, fresh);
  FERRUM_ASSERT(ok, "no block for copy-on-write");
  const Group& G = groups_[g];
  for (size_t i = 0; i < G.layers.size(); ++i) {
    std::memcpy(G.k_pool[i].get() + fresh[0] * block_bytes_, G.k_pool[i].get() + old * block_bytes_,
                block_bytes_);
    std::memcpy(G.v_pool[i].get() + fresh[0] * block_bytes_, G.v_pool[i].get() + old * block_bytes_,
                block_bytes_);
  }
  allocs_[g].decref(old);
  s.tables[g][bi] = fresh[0];
}

uint8_t* KvCache::group_ptr(int layer, bool is_k, Seq& s, int64_t pos) {
  const size_t group_bytes = kernels::kKvGroup * row_bytes_;
  const auto [g, i] = layer_at_[layer];
  if (!paged(g)) return (is_k ? s.k : s.v)[i].data() + pos / kernels::kKvGroup * group_bytes;
  const int64_t bt = opts_.block_tokens;
  const int32_t block = s.tables[g][pos / bt];
  FERRUM_ASSERT(block >= 0, "write at position {} of a windowed layer, behind its window", pos);
  uint8_t* pool = (is_k ? groups_[g].k_pool : groups_[g].v_pool)[i].get();
  return pool + block * block_bytes_ + (pos % bt) / kernels::kKvGroup * group_bytes;
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
  drop_passed(s);
}

void KvCache::register_blocks(Seq& s) {
  const int bt = opts_.block_tokens;
  thread_local std::vector<int32_t> blocks;
  while (static_cast<int64_t>(s.registered + 1) * bt <= static_cast<int64_t>(s.tokens.size())) {
    const int32_t* block_ids = s.tokens.data() + s.registered * bt;
    if (std::any_of(block_ids, block_ids + bt, [](int32_t id) { return id < 0; })) return;  // input rows
    blocks.clear();
    for (const auto& table : s.tables) blocks.push_back(table[s.registered]);
    s.chain = prefix_.offer(s.chain, block_ids, bt, blocks, s.ns);
    ++s.registered;
  }
}

void KvCache::drop_passed(Seq& s) {
  const int64_t bt = opts_.block_tokens, len = s.tokens.size();
  for (size_t g = 1; g < groups_.size(); ++g) {
    std::vector<int32_t>& table = s.tables[g];
    // The next query (at len) and any rollback of up to rollback_tokens see nothing before keep.
    const int64_t keep = first_seen(groups_[g].window, len - opts_.rollback_tokens);
    const int64_t upto = std::min<int64_t>(keep / bt, static_cast<int64_t>(table.size()));
    if (upto <= s.dropped[g]) continue;
    for (int64_t b = s.dropped[g]; b < upto; ++b)
      if (table[b] >= 0) {
        allocs_[g].decref(table[b]);
        table[b] = -1;
      }
    s.dropped[g] = upto;
    if (opts_.prefix_cache) prefix_.trim(static_cast<int>(g), groups_[g].keep_blocks);
  }
}

int64_t KvCache::reuse_prefix(int seq, std::span<const int32_t> prompt, uint64_t ns) {
  if (!opts_.prefix_cache || prompt.size() < 2) return 0;
  if (len(seq) != 0) fail("reuse_prefix: sequence {} is not empty", seq);
  if (has(seq)) release(seq);
  const int bt = opts_.block_tokens;
  const int64_t max_blocks = static_cast<int64_t>(prompt.size() - 1) / bt;
  thread_local std::vector<PrefixCache::Hit> found;
  found.clear();
  // With a disk store, a block read back may need room: the blocks found so far are held (then
  // not evictable) until the sequence holds them.
  thread_local std::vector<std::pair<int, int32_t>> held;
  held.clear();
  for (uint64_t chain = ns; static_cast<int64_t>(found.size()) < max_blocks;) {
    const int32_t* tokens = prompt.data() + found.size() * bt;
    PrefixCache::Hit hit = prefix_.find(chain, tokens, bt);
    if (!hit.blocks && opts_.store && ns == 0) hit = restore(chain, tokens);
    if (!hit.blocks) break;
    if (opts_.store)
      for (size_t g = 0; g < groups_.size(); ++g)
        if (hit.blocks[g] >= 0) allocs_[g].incref(hit.blocks[g]), held.emplace_back(g, hit.blocks[g]);
    found.push_back(hit);
    chain = hit.hash;
  }
  // The first query computed (at n * bt) needs its window's blocks in every windowed group.
  auto first_block = [&](size_t g, int64_t n) { return first_seen(groups_[g].window, n * bt) / bt; };
  auto windows_cached = [&](int64_t n) {
    for (size_t g = 1; g < groups_.size(); ++g)
      for (int64_t b = first_block(g, n); b < n; ++b)
        if (found[b].blocks[g] < 0) return false;
    return true;
  };
  int64_t n = static_cast<int64_t>(found.size());
  while (n > 0 && !windows_cached(n)) --n;
  Seq& s = create(seq);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const int64_t from = g == 0 ? 0 : first_block(g, n);
    for (int64_t b = 0; b < n; ++b) {
      const int32_t block = b < from ? -1 : found[b].blocks[g];
      if (block >= 0) allocs_[g].incref(block);
      s.tables[g].push_back(block);
    }
    s.dropped[g] = from;
  }
  s.tokens.assign(prompt.begin(), prompt.begin() + n * bt);
  s.reserved = n * bt;
  s.registered = static_cast<int>(n);
  s.chain = n > 0 ? found[n - 1].hash : ns;
  s.ns = ns;
  for (const auto& [g, b] : held) allocs_[g].decref(b);
  prefix_.count(n * bt);
  return n * bt;
}

void KvCache::truncate(int seq, int64_t new_len) {
  Seq& s = get(seq);
  const int64_t len = s.tokens.size(), bt = opts_.block_tokens;
  if (new_len < 0 || new_len > len)
    fail("truncate_kv: sequence {} has {} tokens, cannot truncate to {}", seq, len, new_len);
  for (size_t g = 1; g < groups_.size() && new_len > 0; ++g) {
    const int64_t need = first_seen(groups_[g].window, new_len);
    if (s.dropped[g] * bt > need)
      fail(
          "truncate_kv: sequence {}: its layers with a {}-token window keep positions from {} on, and {} "
          "tokens "
          "need them from {} (at most {} tokens can be rolled back past the window)",
          seq, groups_[g].window, s.dropped[g] * bt, new_len, need, opts_.rollback_tokens);
  }
  s.tokens.resize(new_len);
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!paged(static_cast<int>(g))) continue;
    std::vector<int32_t>& table = s.tables[g];
    const size_t keep = static_cast<size_t>((new_len + bt - 1) / bt);
    for (; table.size() > keep; table.pop_back())
      if (table.back() >= 0) allocs_[g].decref(table.back());
    s.dropped[g] = std::min<int64_t>(s.dropped[g], static_cast<int64_t>(table.size()));
  }
  s.reserved = rows_with_storage(s);
  if (opts_.prefix_cache && s.registered > new_len / bt) {
    // Recompute the chain of the blocks that stay registered.
    s.chain = s.ns;
    for (int64_t b = 0; b < new_len / bt; ++b)
      s.chain = PrefixCache::chain_hash(s.chain, s.tokens.data() + b * bt, static_cast<int>(bt));
    s.registered = static_cast<int>(new_len / bt);
  }
}

void KvCache::release(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("release: unknown sequence {}", seq);
  contiguous_rows_ -= it->second.reserved_rows;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (paged(static_cast<int>(g)))
      for (int32_t b : it->second.tables[g])
        if (b >= 0) allocs_[g].decref(b);
  seqs_.erase(it);
}

void KvCache::reset() {
  while (!seqs_.empty()) release(seqs_.begin()->first);
  prefix_.clear();
}

kernels::KvSeqView KvCache::view(int layer, int seq) const {
  const Seq& s = get(seq);
  const auto [g, i] = layer_at_[layer];
  kernels::KvSeqView v;
  v.table = s.tables[g].data();
  v.row_bytes = row_bytes_;
  v.type = opts_.type;
  if (!paged(g)) {
    v.k_base = s.k[i].data();
    v.v_base = s.v[i].data();
    v.block_tokens = std::max<int64_t>(s.reserved_rows, 1);
    v.block_bytes = 0;  // table = {0}
  } else {
    v.k_base = groups_[g].k_pool[i].get();
    v.v_base = groups_[g].v_pool[i].get();
    v.block_tokens = opts_.block_tokens;
    v.block_bytes = block_bytes_;
  }
  return v;
}

size_t KvCache::window_held_bytes() const {
  size_t bytes = 0;
  for (size_t g = 1; g < groups_.size(); ++g)
    bytes += static_cast<size_t>(allocs_[g].total() - allocs_[g].free_count()) * block_bytes_ * 2 *
             groups_[g].layers.size();
  return bytes;
}

size_t KvCache::held_bytes() const {
  const size_t layer0 = groups_[0].layers.size();
  const size_t rows =
      paged(0) ? static_cast<size_t>(allocs_[0].total() - allocs_[0].free_count()) * opts_.block_tokens
               : static_cast<size_t>(contiguous_rows_);
  return rows * row_bytes_ * 2 * layer0 + window_held_bytes();
}

KvUsage KvCache::stats() const {
  KvUsage st;
  st.seq_capacity = opts_.seq_capacity;
  st.bytes_per_token = bytes_per_token();
  st.sequences = seqs_.size();
  for (const auto& [id, s] : seqs_) st.used_tokens += s.tokens.size();
  const size_t layer0 = groups_[0].layers.size();
  if (paged(0)) {
    st.block_tokens = opts_.block_tokens;
    st.total_blocks = allocs_[0].total();
    st.free_blocks = allocs_[0].free_count() + prefix_.evictable(0);
    st.pool_bytes = static_cast<size_t>(allocs_[0].total()) * block_bytes_ * 2 * layer0;
  } else {
    st.block_tokens = opts_.seq_capacity;
    st.total_blocks = max_contiguous_seqs_;
    st.free_blocks = max_contiguous_seqs_ - static_cast<int64_t>(seqs_.size());
    st.pool_bytes = static_cast<size_t>(max_contiguous_seqs_) * opts_.seq_capacity * row_bytes_ * 2 * layer0;
  }
  for (size_t g = 1; g < groups_.size(); ++g) {
    const Group& G = groups_[g];
    st.window_layers += static_cast<int64_t>(G.layers.size());
    st.window_rows = std::max(st.window_rows, window_rows(G.window));
    // The windowed layers' pool: their window for every full-length sequence the pool holds.
    st.pool_bytes += static_cast<size_t>(G.keep_blocks) * block_bytes_ * 2 * G.layers.size();
  }
  st.held_bytes = held_bytes();
  st.window_held_bytes = window_held_bytes();
  st.peak_held_bytes = peak_held_;
  st.prefix_hits = prefix_.hits();
  st.prefix_misses = prefix_.misses();
  st.prefix_saved_tokens = prefix_.saved_tokens();
  if (opts_.store) st.prefix_disk_reads = opts_.store->loaded(), st.prefix_disk_writes = opts_.store->saved();
  st.prefix_entries = prefix_.entries();
  st.prefix_bytes = static_cast<size_t>(prefix_.entries()) * block_bytes_ * 2 * layer0;
  return st;
}

}  // namespace ferrum::runtime
