// Element-wise and per-row operations of the transformer forward pass (norms, RoPE, activations).
// These are memory-light compared to the matmuls; they are written as simple loops the compiler
// vectorises, with accumulations in double where ggml does the same (norms, softmax sums).
#pragma once

#include <cstdint>

namespace ferrum::kernels {

// y = x / sqrt(mean(x^2) + eps) * w   (w may be null: no scale). x and y may alias.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
// y = (x - mean) / sqrt(var + eps) * w + b   (LayerNorm; w/b may be null). x and y may alias.
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps);

// Rotary position embedding, in place on one head vector of length head_dim (only the first
// n_rot dims rotate). `cos_sin` holds (cos, sin) pairs for n_rot/2 frequencies at this position.
// interleaved: rotate (x[2i], x[2i+1]) (GGUF "llama"/llama2.c layout); otherwise rotate-half:
// (x[i], x[i + n_rot/2]) (NeoX / Hugging Face layout).
void rope_apply(float* x, const float* cos_sin, int n_rot, bool interleaved);

// Fills cos_sin[2*i], cos_sin[2*i+1] for i < n_rot/2 at position `pos`, computed as ggml does:
// theta_i = pos * base^(-2i/n_rot) built by repeated float multiplication, divided by
// freq_factors[i] (Llama-3 scaling, Phi-3 LongRoPE; may be null) and multiplied by freq_scale
// (linear scaling); cos and sin are multiplied by mscale (LongRoPE's attention factor).
void rope_cache(float* cos_sin, int64_t pos, int n_rot, float base, float freq_scale,
                const float* freq_factors, float mscale = 1.0f);

// out[i] = silu(gate[i]) * up[i]
void swiglu(const float* gate, const float* up, float* out, int64_t n);
// gpt-oss's clamped SwiGLU: g = min(gate[i], limit), u = clamp(up[i], -limit, limit),
// out[i] = g * sigmoid(alpha * g) * (u + 1), computed as silu(alpha g) * (u + 1) / alpha.
void swiglu_clamped(const float* gate, const float* up, float* out, int64_t n, float limit, float alpha);
// out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU, Gemma's "gelu_pytorch_tanh", IsaKernels::geglu):
// gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void geglu_tanh(const float* gate, const float* up, float* out, int64_t n);
// GELU in place, erf form (Hugging Face's "gelu"): x/2 (1 + erf(x/sqrt 2)), erf within 1.5e-7
// on the SIMD tiers (IsaKernels::gelu).
void gelu_erf(float* x, int64_t n);

// In place softmax over n values; returns nothing. Sum accumulated in double.
void softmax(float* x, int64_t n);

// y += x
void add_inplace(float* y, const float* x, int64_t n);

}  // namespace ferrum::kernels
