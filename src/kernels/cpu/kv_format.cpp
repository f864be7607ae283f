#include "kernels/cpu/kv_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"

namespace ferrum::kernels {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F32:
      return "f32";
    case KvType::F16:
      return "f16";
    case KvType::BF16:
      return "bf16";
    case KvType::INT8:
      return "int8";
  }
  return "?";
}

size_t kv_row_bytes(KvType t, int n_head_kv, int head_dim) {
  const size_t n = static_cast<size_t>(n_head_kv) * head_dim;
  switch (t) {
    case KvType::F32:
      return n * 4;
    case KvType::F16:
    case KvType::BF16:
      return n * 2;
    case KvType::INT8:
      return n + static_cast<size_t>(n_head_kv) * 4;
  }
  return 0;
}

void kv_store_row(KvType t, const float* src, uint8_t* dst, int n_head_kv, int head_dim) {
  const int n = n_head_kv * head_dim;
  switch (t) {
    case KvType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case KvType::F16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case KvType::BF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case KvType::INT8: {
      // Symmetric per (token, head): q = round(x / s), s = max|x| / 127.
      auto* q = reinterpret_cast<int8_t*>(dst);
      float* scales = reinterpret_cast<float*>(dst + n);
      for (int h = 0; h < n_head_kv; ++h) {
        const float* x = src + h * head_dim;
        float amax = 0.0f;
        for (int i = 0; i < head_dim; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float s = amax / 127.0f;
        const float inv = s > 0 ? 1.0f / s : 0.0f;
        for (int i = 0; i < head_dim; ++i)
          q[h * head_dim + i] = static_cast<int8_t>(std::nearbyint(x[i] * inv));
        std::memcpy(scales + h, &s, sizeof(float));
      }
      return;
    }
  }
}

void kv_load_head(KvType t, const uint8_t* row, int h, int n_head_kv, int head_dim, float* out) {
  switch (t) {
    case KvType::F32:
      std::memcpy(out, row + static_cast<size_t>(h) * head_dim * 4, head_dim * sizeof(float));
      return;
    case KvType::F16: {
      const auto* s = reinterpret_cast<const uint16_t*>(row) + static_cast<size_t>(h) * head_dim;
      for (int i = 0; i < head_dim; ++i) out[i] = f16_to_f32(s[i]);
      return;
    }
    case KvType::BF16: {
      const auto* s = reinterpret_cast<const uint16_t*>(row) + static_cast<size_t>(h) * head_dim;
      for (int i = 0; i < head_dim; ++i) out[i] = bf16_to_f32(s[i]);
      return;
    }
    case KvType::INT8: {
      const auto* q = reinterpret_cast<const int8_t*>(row) + static_cast<size_t>(h) * head_dim;
      float s;
      std::memcpy(&s, row + static_cast<size_t>(n_head_kv) * head_dim + h * 4, sizeof(float));
      for (int i = 0; i < head_dim; ++i) out[i] = q[i] * s;
      return;
    }
  }
}

}  // namespace ferrum::kernels
