// The public KV cache (include/ferrum/kv_cache.h): option parsing and sequence bookkeeping over
// runtime::KvCache, which the models read and write directly.
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/fail.h"
#include "ferrum/kv_cache.h"
#include "runtime/kv_cache.h"

namespace ferrum {
namespace {

// Checks KvOptions and gives the runtime's options; throws naming a bad value.
runtime::KvCacheOptions runtime_options(const KvOptions& o, int64_t default_capacity) {
  runtime::KvCacheOptions r;
  r.layout = o.layout;
  r.type = o.type.value_or(kDefaultKvType);  // the one place an unset type is resolved
  if (o.capacity < 0) fail("KV capacity must be positive, got {}", o.capacity);
  if (o.pool_tokens < 0) fail("KV pool size must be positive, got {}", o.pool_tokens);
  r.seq_capacity = o.capacity > 0 ? o.capacity : default_capacity;
  r.pool_tokens = o.pool_tokens;
  if (o.pool_sequences < 0) fail("KV pool sequences must be positive, got {}", o.pool_sequences);
  if (o.pool_sequences > 0) r.pool_sequences = o.pool_sequences;
  r.prefix_cache = o.prefix_cache;
  if (o.rollback_tokens < -1) fail("KV rollback must not be negative, got {}", o.rollback_tokens);
  if (o.rollback_tokens >= 0) r.rollback_tokens = o.rollback_tokens;
  if (o.prefix_cache && r.layout != KvLayout::Paged) fail("the prefix cache needs --kv-layout paged");
  return r;
}

// A whole number from an environment variable; throws naming the variable.
int64_t env_count(const char* name, const char* v) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || n < 0)
    fail("{}: expects a whole number of tokens, got '{}'", name, v);
  return n;
}

}  // namespace

void KvOptions::apply_env() {
  auto env = [](const char* k) -> const char* { return std::getenv(k); };
  // The environment is a text edge: its names are parsed here, with the variable named on error.
  auto parsed = [](const char* name, auto parse, const char* v) {
    try {
      return parse(v);
    } catch (const Error& e) {
      fail("{}: {}", name, e.what());
    }
  };
  if (const char* v = env("FERRUM_KV_LAYOUT"); v && layout == KvLayout::Contiguous)
    layout = parsed("FERRUM_KV_LAYOUT", parse_kv_layout, v);
  if (const char* v = env("FERRUM_KV_TYPE"); v && !type) type = parsed("FERRUM_KV_TYPE", parse_kv_type, v);
  if (const char* v = env("FERRUM_KV_CAPACITY"); v && capacity == 0)
    capacity = env_count("FERRUM_KV_CAPACITY", v);
  if (const char* v = env("FERRUM_KV_POOL"); v && pool_tokens == 0)
    pool_tokens = env_count("FERRUM_KV_POOL", v);
  if (const char* v = env("FERRUM_PREFIX_CACHE"); v && !prefix_cache) prefix_cache = std::string(v) == "1";
}

namespace {
// The runtime's options with the layers' windows, and the disk store when asked for: its identity
// is the caller's key and everything that shapes a block's bytes.
runtime::KvCacheOptions with_windows(runtime::KvCacheOptions r, std::vector<int32_t> windows,
                                     const KvOptions& o, int n_layer, int n_head_kv, int head_dim) {
  r.layer_windows = std::move(windows);
  if (!o.prefix_cache_dir.empty() && r.prefix_cache) {
    const std::string identity = fmt::format("{}|kv {} block {} layers {} kv_heads {} head_dim {} windows {}",
                                             o.prefix_cache_key, kv_type_name(r.type), r.block_tokens,
                                             n_layer, n_head_kv, head_dim, fmt::join(r.layer_windows, ","));
    r.store = std::make_shared<runtime::PrefixStore>(
        o.prefix_cache_dir, identity, o.prefix_cache_dir_bytes ? o.prefix_cache_dir_bytes : 8ull << 30);
  }
  return r;
}
}  // namespace

KvCache::KvCache(int n_layer, int n_head_kv, int head_dim, const KvOptions& opts, int64_t default_capacity,
                 std::vector<int32_t> layer_windows)
    : opts_(opts),
      impl_(std::make_unique<runtime::KvCache>(
          n_layer, n_head_kv, head_dim,
          with_windows(runtime_options(opts, default_capacity), std::move(layer_windows), opts, n_layer,
                       n_head_kv, head_dim))) {
  opts_.type = impl_->options().type;
  opts_.capacity = impl_->options().seq_capacity;
  opts_.pool_tokens = impl_->options().pool_tokens;
  opts_.prefix_cache = impl_->options().prefix_cache;
  opts_.rollback_tokens = impl_->options().rollback_tokens;
}

KvCache::~KvCache() {
  record(KvOp::Kind::Drop);
}

void KvCache::set_journal(KvJournal* journal, int id) {
  if (!opts_.prefix_cache_dir.empty())
    fail("--prefix-cache-dir: a prompt cache on disk does not work over MPI ranks (--pipeline, --tp) yet");
  for (auto& j : journals_)
    if (j.first == journal) {  // a new number in the same journal
      j.second = id;
      journal->push(KvOp{KvOp::Kind::Create, id, 0, 0, 0, {}, opts_});
      return;
    }
  journals_.push_back({journal, id});
  journal->push(KvOp{KvOp::Kind::Create, id, 0, 0, 0, {}, opts_});
}

int64_t KvCache::capacity() const {
  return impl_->options().seq_capacity;
}
int KvCache::n_layer() const {
  return impl_->n_layer();
}
int64_t KvCache::seq_len(int seq) const {
  return impl_->len(seq);
}
bool KvCache::has(int seq) const {
  return impl_->has(seq);
}

void KvCache::truncate(int seq, int64_t new_len) {
  if (!impl_->has(seq)) fail("truncate: unknown sequence {}", seq);
  impl_->truncate(seq, new_len);
  record(KvOp::Kind::Truncate, seq, new_len);
}

void KvCache::release(int seq) {
  impl_->release(seq);
  record(KvOp::Kind::Release, seq);
}
void KvCache::reset() {
  impl_->reset();
  record(KvOp::Kind::Reset);
}
void KvCache::reserve(int seq, int64_t max_tokens) {
  impl_->reserve(seq, max_tokens);
  record(KvOp::Kind::Reserve, seq, max_tokens);
}

bool KvCache::can_fit(std::span<const std::pair<int, int64_t>> seq_lengths) const {
  return impl_->can_reserve(seq_lengths);
}

int64_t KvCache::reuse_prefix(int seq, std::span<const int32_t> prompt, uint64_t lora_id) {
  const int64_t n = impl_->reuse_prefix(seq, prompt, lora_id);
  if (!journals_.empty() && opts_.prefix_cache) {  // the other ranks' caches reuse the same blocks
    KvOp op;
    op.lora_id = lora_id;
    op.prompt.assign(prompt.begin(), prompt.end());
    record(KvOp::Kind::Reuse, seq, n, std::move(op));
  }
  return n;
}

KvUsage KvCache::usage() const {
  return impl_->stats();
}

}  // namespace ferrum
