#include "kernels/cpu/kv_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fail.h"
#include "core/fp16.h"

namespace ferrum::kernels {

size_t kv_row_bytes(KvType t, int n_head_kv, int head_dim) {
  const size_t n = static_cast<size_t>(n_head_kv) * head_dim;
  switch (t) {
    case KvType::F32:
      return n * 4;
    case KvType::F16:
    case KvType::BF16:
      return n * 2;
    case KvType::INT8:
      if (head_dim % 4 != 0)
        fail("an INT8 KV cache needs a head size that is a multiple of 4, got {}", head_dim);
      return n + static_cast<size_t>(n_head_kv) * 4;
  }
  return 0;
}

namespace {

// Writes head_dim floats x into the group: element d at e + d * stride (elements of the type).
// INT8 is symmetric per (token, head): q = round(x / s), s = max|x| / 127, s stored at *scale,
// q + bias stored (keys: kInt8KeyBias, values: 0).
void store_head(KvType t, const float* x, uint8_t* e, size_t stride, int head_dim, float* scale, int bias) {
  switch (t) {
    case KvType::F32:
      for (int d = 0; d < head_dim; ++d) reinterpret_cast<float*>(e)[d * stride] = x[d];
      return;
    case KvType::F16:
      for (int d = 0; d < head_dim; ++d) reinterpret_cast<uint16_t*>(e)[d * stride] = f32_to_f16(x[d]);
      return;
    case KvType::BF16:
      for (int d = 0; d < head_dim; ++d) reinterpret_cast<uint16_t*>(e)[d * stride] = f32_to_bf16(x[d]);
      return;
    case KvType::INT8: {
      float amax = 0.0f;
      for (int d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(x[d]));
      const float s = amax / 127.0f, inv = s > 0 ? 1.0f / s : 0.0f;
      for (int d = 0; d < head_dim; ++d)
        e[d * stride] = static_cast<uint8_t>(static_cast<int>(std::nearbyint(x[d] * inv)) + bias);
      std::memcpy(scale, &s, sizeof(float));
      return;
    }
  }
}

void load_head(KvType t, const uint8_t* e, size_t stride, int head_dim, float scale, int bias, float* out) {
  switch (t) {
    case KvType::F32:
      for (int d = 0; d < head_dim; ++d) out[d] = reinterpret_cast<const float*>(e)[d * stride];
      return;
    case KvType::F16:
      for (int d = 0; d < head_dim; ++d)
        out[d] = f16_to_f32(reinterpret_cast<const uint16_t*>(e)[d * stride]);
      return;
    case KvType::BF16:
      for (int d = 0; d < head_dim; ++d)
        out[d] = bf16_to_f32(reinterpret_cast<const uint16_t*>(e)[d * stride]);
      return;
    case KvType::INT8:
      for (int d = 0; d < head_dim; ++d)
        out[d] = static_cast<float>(static_cast<int8_t>(e[d * stride] - bias)) * scale;
      return;
  }
}

// Where an INT8 token's scale goes (other types have none: nullptr, no pointer past the group).
float* scale_slot(KvType t, uint8_t* group, int i, int h, int n_head_kv, int head_dim) {
  if (t != KvType::INT8) return nullptr;
  return kv_scales(group, h, head_dim) + i;
}

float scale_of(KvType t, const uint8_t* group, int i, int h, int n_head_kv, int head_dim) {
  if (t != KvType::INT8) return 1.0f;
  float s;
  std::memcpy(&s, kv_scales(group, h, head_dim) + i, sizeof(float));
  return s;
}

// Where value row i of head h starts, and its elements' stride (INT8: token pairs interleaved).
size_t value_start(KvType t, int h, int i, int head_dim) {
  return t == KvType::INT8 ? kv_int8_value_offset(h, i, 0, head_dim)
                           : kv_value_offset(h, i, head_dim) * kv_element_bytes(t);
}
size_t value_stride(KvType t) {
  return t == KvType::INT8 ? 2 : 1;
}

}  // namespace

void kv_store_key(KvType t, const float* src, uint8_t* group, int i, int n_head_kv, int head_dim) {
  if (t == KvType::INT8) {  // levels into a row, then to their quad places
    uint8_t row[1024];      // head sizes are at most 1024 (checked at load)
    if (head_dim > 1024) fail("kv_store_key: head size {} is more than 1024", head_dim);
    for (int h = 0; h < n_head_kv; ++h) {
      store_head(t, src + static_cast<size_t>(h) * head_dim, row, 1, head_dim,
                 scale_slot(t, group, i, h, n_head_kv, head_dim), kInt8KeyBias);
      for (int d = 0; d < head_dim; ++d) group[kv_int8_key_offset(h, d, i, head_dim)] = row[d];
    }
    return;
  }
  const size_t es = kv_element_bytes(t);
  for (int h = 0; h < n_head_kv; ++h)
    store_head(t, src + static_cast<size_t>(h) * head_dim, group + kv_key_offset(h, 0, i, head_dim) * es,
               kKvGroup, head_dim, scale_slot(t, group, i, h, n_head_kv, head_dim), kInt8KeyBias);
}

void kv_store_value(KvType t, const float* src, uint8_t* group, int i, int n_head_kv, int head_dim) {
  for (int h = 0; h < n_head_kv; ++h)
    store_head(t, src + static_cast<size_t>(h) * head_dim, group + value_start(t, h, i, head_dim),
               value_stride(t), head_dim, scale_slot(t, group, i, h, n_head_kv, head_dim), 0);
}

void kv_load_key(KvType t, const uint8_t* group, int i, int h, int n_head_kv, int head_dim, float* out) {
  if (t == KvType::INT8) {
    const float s = scale_of(t, group, i, h, n_head_kv, head_dim);
    for (int d = 0; d < head_dim; ++d)
      out[d] = static_cast<float>(group[kv_int8_key_offset(h, d, i, head_dim)] - kInt8KeyBias) * s;
    return;
  }
  load_head(t, group + kv_key_offset(h, 0, i, head_dim) * kv_element_bytes(t), kKvGroup, head_dim,
            scale_of(t, group, i, h, n_head_kv, head_dim), kInt8KeyBias, out);
}

void kv_load_value(KvType t, const uint8_t* group, int i, int h, int n_head_kv, int head_dim, float* out) {
  load_head(t, group + value_start(t, h, i, head_dim), value_stride(t), head_dim,
            scale_of(t, group, i, h, n_head_kv, head_dim), 0, out);
}

}  // namespace ferrum::kernels
