// The fields of the grid i-quants' blocks (quant_iq.h), inline so that the kernels, which know the
// kind at compile time, get each kind's code without a call or a switch per sub-block. Internal
// linkage: the SIMD tiers' translation units include it with their own instruction sets, and no
// copy may be shared between them.
#pragma once

#include <cstring>

#include "core/fp16.h"
#include "core/iq_grids.h"
#include "core/quant_iq.h"

namespace ferrum::quant_iq {
namespace {  // NOLINT(google-build-namespaces): one copy per translation unit, see above
namespace fields {

using namespace iq_grids;

inline uint32_t u32_at(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t u16_at(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Two 4-value IQ3 grid entries as one group of 8.
inline uint64_t pair(uint32_t lo, uint32_t hi) {
  return lo | static_cast<uint64_t>(hi) << 32;
}

// Sub-block ib of each kind: groups and the stored 4-bit (IQ2, IQ3) or 3-bit (IQ1) scale fields.
inline void iq2xxs(const BlockIQ2_XXS& x, int ib, IqSub& o) {
  const auto* q = reinterpret_cast<const uint8_t*>(x.qs + 4 * ib);
  const uint32_t aux = u32_at(q + 4);
  for (int l = 0; l < 4; ++l) o.g[l] = {kIQ2XXS[q[l]], signs8(aux >> (7 * l)), 0};
  o.scale[0] = o.scale[1] = static_cast<int16_t>(aux >> 28);
}
inline void iq2xs(const BlockIQ2_XS& x, int ib, IqSub& o) {
  for (int l = 0; l < 4; ++l) {
    const uint16_t v = x.qs[4 * ib + l];
    o.g[l] = {kIQ2XS[v & 511], signs8(v >> 9), 0};
  }
  o.scale[0] = static_cast<int16_t>(x.scales[ib] & 0xF);
  o.scale[1] = static_cast<int16_t>(x.scales[ib] >> 4);
}
inline void iq2s(const BlockIQ2_S& x, int ib, IqSub& o) {
  for (int l = 0; l < 4; ++l)
    o.g[l] = {kIQ2S[x.qs[4 * ib + l] | ((x.qh[ib] << (8 - 2 * l)) & 0x300)], x.qs[32 + 4 * ib + l], 0};
  o.scale[0] = static_cast<int16_t>(x.scales[ib] & 0xF);
  o.scale[1] = static_cast<int16_t>(x.scales[ib] >> 4);
}
inline void iq3xxs(const BlockIQ3_XXS& x, int ib, IqSub& o) {
  const uint8_t* q = x.qs + 8 * ib;
  const uint32_t aux = u32_at(x.qs + 64 + 4 * ib);
  for (int l = 0; l < 4; ++l)
    o.g[l] = {pair(kIQ3XXS[q[2 * l]], kIQ3XXS[q[2 * l + 1]]), signs8(aux >> (7 * l)), 0};
  o.scale[0] = o.scale[1] = static_cast<int16_t>(aux >> 28);
}
inline void iq3s(const BlockIQ3_S& x, int ib, IqSub& o) {
  const uint8_t* q = x.qs + 8 * ib;
  const int h = x.qh[ib];
  for (int l = 0; l < 4; ++l)
    o.g[l] = {
        pair(kIQ3S[q[2 * l] | ((h << (8 - 2 * l)) & 256)], kIQ3S[q[2 * l + 1] | ((h << (7 - 2 * l)) & 256)]),
        x.signs[4 * ib + l], 0};
  o.scale[0] = o.scale[1] = static_cast<int16_t>((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xF);
}
inline void iq1s(const BlockIQ1_S& x, int ib, IqSub& o) {
  const uint16_t h = x.qh[ib];
  const int8_t off = h & 0x8000 ? -1 : 1;
  for (int l = 0; l < 4; ++l) o.g[l] = {kIQ1S[x.qs[4 * ib + l] | (((h >> (3 * l)) & 7) << 8)], 0, off};
  o.scale[0] = o.scale[1] = static_cast<int16_t>((h >> 12) & 7);
}
inline void iq1m(const BlockIQ1_M& x, int ib, IqSub& o) {
  for (int l = 0; l < 4; ++l) {
    const int h = x.qh[2 * ib + l / 2];
    // Even groups: index bits 8-10 from bits 0-2 of qh, offset sign bit 3; odd: bits 4-6 and 7.
    const int idx = x.qs[4 * ib + l] | ((h << (l % 2 ? 4 : 8)) & 0x700);
    o.g[l] = {kIQ1S[idx], 0, static_cast<int8_t>(h & (l % 2 ? 0x80 : 0x08) ? -1 : 1)};
  }
  const uint16_t sc = u16_at(x.scales + 2 * (ib / 2));
  o.scale[0] = static_cast<int16_t>((sc >> (6 * (ib % 2))) & 7);
  o.scale[1] = static_cast<int16_t>((sc >> (6 * (ib % 2) + 3)) & 7);
}
inline float iq1m_d(const BlockIQ1_M& x) {
  const uint16_t* sc = reinterpret_cast<const uint16_t*>(x.scales);
  const uint16_t h = static_cast<uint16_t>((u16_at(sc) >> 12) | ((u16_at(sc + 1) >> 8) & 0x00f0) |
                                           ((u16_at(sc + 2) >> 4) & 0x0f00) | (u16_at(sc + 3) & 0xf000));
  return f16_to_f32(h);
}

// The stored fields of sub-block ib (scale fields s, not yet 2s + 1).
inline void fields(Kind k, const uint8_t* b, int ib, IqSub& o) {
  switch (k) {
    case Kind::IQ2_XXS:
      return iq2xxs(*reinterpret_cast<const BlockIQ2_XXS*>(b), ib, o);
    case Kind::IQ2_XS:
      return iq2xs(*reinterpret_cast<const BlockIQ2_XS*>(b), ib, o);
    case Kind::IQ2_S:
      return iq2s(*reinterpret_cast<const BlockIQ2_S*>(b), ib, o);
    case Kind::IQ3_XXS:
      return iq3xxs(*reinterpret_cast<const BlockIQ3_XXS*>(b), ib, o);
    case Kind::IQ3_S:
      return iq3s(*reinterpret_cast<const BlockIQ3_S*>(b), ib, o);
    case Kind::IQ1_S:
      return iq1s(*reinterpret_cast<const BlockIQ1_S*>(b), ib, o);
    case Kind::IQ1_M:
      return iq1m(*reinterpret_cast<const BlockIQ1_M*>(b), ib, o);
  }
}

inline float d_of(Kind k, const uint8_t* b) {
  return k == Kind::IQ1_M ? iq1m_d(*reinterpret_cast<const BlockIQ1_M*>(b)) : f16_to_f32(u16_at(b));
}

}  // namespace fields

// D such that value = D * (2s + 1) * level: IQ2 d/8, IQ3_XXS d/4, IQ3_S and IQ1 d.
inline float scale_of(Kind k, const uint8_t* block) {
  const float d = fields::d_of(k, block);
  switch (k) {
    case Kind::IQ3_XXS:
      return d * 0.25f;
    case Kind::IQ3_S:
    case Kind::IQ1_S:
    case Kind::IQ1_M:
      return d;
    default:
      return d * 0.125f;
  }
}

inline void sub_block(Kind k, const uint8_t* block, int ib, IqSub& out) {
  fields::fields(k, block, ib, out);
  for (int16_t& s : out.scale) s = static_cast<int16_t>(2 * s + 1);
}

}  // namespace
}  // namespace ferrum::quant_iq
