// The public KV cache (include/ferrum/kv_cache.h): option parsing and sequence bookkeeping over
// runtime::KvCache, which the models read and write directly.
#include <cstdlib>

#include "core/fail.h"
#include "ferrum/kv_cache.h"
#include "runtime/kv_cache.h"

namespace ferrum {
namespace {

// The element type a cache is built with: the one asked for, or the default when unset. The one
// place an empty KvOptions::type is resolved.
std::string resolved_type(const KvOptions& o) {
  return o.type.empty() ? kDefaultKvType : o.type;
}

kernels::KvType kv_type(const std::string& name) {
  if (name == "f32") return kernels::KvType::F32;
  if (name == "f16") return kernels::KvType::F16;
  if (name == "bf16") return kernels::KvType::BF16;
  if (name == "int8") return kernels::KvType::INT8;
  fail("KV type '{}' is not known (use f32, f16, bf16 or int8)", name);
}

// Parses KvOptions (layout/type names) into the runtime's options; throws naming a bad value.
runtime::KvCacheOptions runtime_options(const KvOptions& o, int64_t default_capacity) {
  runtime::KvCacheOptions r;
  if (o.layout == "contiguous") {
    r.layout = runtime::KvLayout::Contiguous;
  } else if (o.layout == "paged") {
    r.layout = runtime::KvLayout::Paged;
  } else {
    fail("KV layout '{}' is not known (use contiguous or paged)", o.layout);
  }
  r.type = kv_type(resolved_type(o));
  if (o.capacity < 0) fail("KV capacity must be positive, got {}", o.capacity);
  if (o.pool_tokens < 0) fail("KV pool size must be positive, got {}", o.pool_tokens);
  r.seq_capacity = o.capacity > 0 ? o.capacity : default_capacity;
  r.pool_tokens = o.pool_tokens;
  if (o.pool_sequences < 0) fail("KV pool sequences must be positive, got {}", o.pool_sequences);
  if (o.pool_sequences > 0) r.pool_sequences = o.pool_sequences;
  r.prefix_cache = o.prefix_cache;
  if (o.prefix_cache && r.layout != runtime::KvLayout::Paged)
    fail("the prefix cache needs --kv-layout paged");
  return r;
}

}  // namespace

void KvOptions::apply_env() {
  auto env = [](const char* k) -> const char* { return std::getenv(k); };
  if (const char* v = env("FERRUM_KV_LAYOUT"); v && layout == "contiguous") layout = v;
  if (const char* v = env("FERRUM_KV_TYPE"); v && type.empty()) type = v;
  if (const char* v = env("FERRUM_KV_CAPACITY"); v && capacity == 0) capacity = std::atoll(v);
  if (const char* v = env("FERRUM_KV_POOL"); v && pool_tokens == 0) pool_tokens = std::atoll(v);
  if (const char* v = env("FERRUM_PREFIX_CACHE"); v && !prefix_cache) prefix_cache = std::string(v) == "1";
}

KvCache::KvCache(int n_layer, int n_head_kv, int head_dim, const KvOptions& opts, int64_t default_capacity)
    : opts_(opts),
      impl_(std::make_unique<runtime::KvCache>(n_layer, n_head_kv, head_dim,
                                               runtime_options(opts, default_capacity))) {
  opts_.type = resolved_type(opts);
  opts_.capacity = impl_->options().seq_capacity;
  opts_.pool_tokens = impl_->options().pool_tokens;
  opts_.prefix_cache = impl_->options().prefix_cache;
}

KvCache::~KvCache() = default;

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
}

void KvCache::release(int seq) {
  impl_->release(seq);
}
void KvCache::reset() {
  impl_->reset();
}
void KvCache::reserve(int seq, int64_t max_tokens) {
  impl_->reserve(seq, max_tokens);
}

bool KvCache::can_fit(std::span<const std::pair<int, int64_t>> seq_lengths) const {
  return impl_->can_reserve(seq_lengths);
}

int64_t KvCache::reuse_prefix(int seq, std::span<const int32_t> prompt, uint64_t lora_id) {
  return impl_->reuse_prefix(seq, prompt, lora_id);
}

KvUsage KvCache::usage() const {
  return impl_->stats();
}

}  // namespace ferrum
