// The KV cache's vocabulary, one set of types for the public API (ferrum/kv_cache.h), the runtime
// and the kernels: how sequences are laid out and what element type keys and values are stored
// in. Text names are parsed only at the edges (command-line flags, environment variables).
#pragma once

#include <string_view>

namespace ferrum {

// Contiguous: each sequence a region of its own. Paged: a shared pool of 16-token blocks with
// reference counts (needed by the prefix cache).
enum class KvLayout { Contiguous, Paged };
// F32, F16, BF16, or INT8 (symmetric, one float scale per token and head).
enum class KvType : int { F32 = 0, F16 = 1, BF16 = 2, INT8 = 3 };

// The element type of a cache whose KvOptions::type is unset (llama.cpp's default too): f16
// measures faster than f32 at every depth and stays within 0.02 of f32's logits on the test
// fixtures (tests/models/kv_type_quality_test.cpp).
inline constexpr KvType kDefaultKvType = KvType::F16;

const char* kv_layout_name(KvLayout l);  // "contiguous", "paged"
const char* kv_type_name(KvType t);      // "f32", "f16", "bf16", "int8"
// The names above back to values; throw naming the accepted names.
KvLayout parse_kv_layout(std::string_view name);
KvType parse_kv_type(std::string_view name);

}  // namespace ferrum
