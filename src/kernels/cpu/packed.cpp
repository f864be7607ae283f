// Repacking of file rows into the 16-row interleaved layouts of packed.h, and the way back (to
// reconstruct a row for checks).
#include "kernels/cpu/packed.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "core/quant_mxfp4.h"
#include "core/quant_q4z.h"

namespace ferrum::kernels {
namespace {

size_t round64(size_t n) {
  return (n + 63) / 64 * 64;
}

size_t group_bytes(DType t, int64_t cols) {
  switch (t) {
    case DType::Q4_0:
    case DType::IQ4_NL:  // Q4_0's bytes: the nibbles index the IQ4 levels
    case DType::MXFP4:   // the same, with the scale as F16
      return round64(q32_group_bytes(cols / 32, 256));
    case DType::Q5_0:
      return round64(q32_group_bytes(cols / 32, 320));
    case DType::Q8_0:
      return round64(q32_group_bytes(cols / 32, 512));
    case DType::Q4_1:
      return round64(q41_group_bytes(cols / 32));
    case DType::Q4_Z:
      return q4z_group_bytes(cols / 32);
    case DType::IQ4_XS:
      return static_cast<size_t>(cols / 256) * kIQ4XSBlockBytes;
    case DType::Q3_K:
      return static_cast<size_t>(cols / 256) * kQ3KBlockBytes;
    case DType::Q2_K:
      return static_cast<size_t>(cols / 256) * kQ2KBlockBytes;
    case DType::Q4_K:
      return static_cast<size_t>(cols / 256) * kQ4KBlockBytes;
    case DType::Q5_K:
      return static_cast<size_t>(cols / 256) * kQ5KBlockBytes;
    case DType::Q6_K:
      return static_cast<size_t>(cols / 256) * kQ6KBlockBytes;
    case DType::F16:
    case DType::BF16:
      return static_cast<size_t>(cols) * 2 * kPackRows;
    default:
      return 0;
  }
}

// Byte i of the 4 at [j][row r][4] in a "[j][16 rows][4]" array.
inline size_t lane_byte(int j, int r, int i) {
  return static_cast<size_t>(j) * 64 + r * 4 + i;
}

inline void set_bit(uint8_t* p, int bit, uint32_t v) {
  p[bit / 8] = static_cast<uint8_t>((p[bit / 8] & ~(1u << (bit % 8))) | (v << (bit % 8)));
}
inline uint32_t get_bit(const uint8_t* p, int bit) {
  return (p[bit / 8] >> (bit % 8)) & 1u;
}

// Row r of a Q4_K / Q5_K super-block (qh null for Q4_K): scales and mins as bytes, nibbles (and
// Q5_K's fifth bits as masks ahead of each chunk's nibbles).
void pack_k4(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs, const uint8_t* qh, int r,
             const Q4KOffsets& o, size_t chunk_bytes, uint8_t* out) {
  const size_t nib = qh ? kQ5KMaskBytes : 0;  // Q5_K: the masks come first in each chunk
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 4; ++i) {
        uint8_t* chunk = out + o.qs + c * chunk_bytes;
        chunk[nib + lane_byte(j, r, i)] = qs[32 * c + 4 * j + i];
        if (qh) {
          set_bit(chunk + 16 * j, 4 * r + i, (qh[4 * j + i] >> (2 * c)) & 1u);
          set_bit(chunk + 16 * j + 8, 4 * r + i, (qh[4 * j + i] >> (2 * c + 1)) & 1u);
        }
      }
  uint64_t s8, m8;
  k4_scales_mins(scales, s8, m8);
  for (int j = 0; j < 8; ++j) {
    out[o.sc + j * kPackRows + r] = static_cast<uint8_t>(s8 >> (8 * j));
    out[o.mn + (j / 2) * 2 * kPackRows + 2 * r + j % 2] = static_cast<uint8_t>(m8 >> (8 * j));
  }
  reinterpret_cast<uint16_t*>(out + o.d)[r] = d;
  reinterpret_cast<uint16_t*>(out + o.dmin)[r] = dmin;
}

// Writes one 16-row group: pointers to the 16 file rows; nb blocks (super-blocks; F16/BF16: columns).
void pack_group(DType t, const uint8_t* const rows[kPackRows], int64_t nb, uint8_t* out) {
  if (t == DType::F16 || t == DType::BF16) {
    auto* o = reinterpret_cast<uint16_t*>(out);
    for (int r = 0; r < kPackRows; ++r) {
      const auto* row = reinterpret_cast<const uint16_t*>(rows[r]);
      for (int64_t k = 0; k < nb; ++k) o[float_group_index(t, k, r)] = row[k];
    }
    return;
  }
  for (int64_t b = 0; b < nb; ++b)
    for (int r = 0; r < kPackRows; ++r) {
      if (t == DType::Q4_0 || t == DType::IQ4_NL) {  // the same block layout
        static_assert(sizeof(BlockIQ4_NL) == sizeof(BlockQ4_0));
        const auto& blk = reinterpret_cast<const BlockQ4_0*>(rows[r])[b];
        const Q32Offsets o = q32_offsets(b, 256);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[4 * j + i];
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
      } else if (t == DType::MXFP4) {  // Q4_0's layout, the scale as F16 (checked by packable_values)
        const auto& blk = reinterpret_cast<const BlockMXFP4*>(rows[r])[b];
        const Q32Offsets o = q32_offsets(b, 256);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[4 * j + i];
        reinterpret_cast<uint16_t*>(out + o.d)[r] =
            mxfp4_scale_fits_f16(blk.e) ? f32_to_f16(mxfp4_scale(blk.e)) : uint16_t{0};
      } else if (t == DType::Q4_1) {
        const auto& blk = reinterpret_cast<const BlockQ4_1*>(rows[r])[b];
        const Q32Offsets o = q41_offsets(b);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[4 * j + i];
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
        reinterpret_cast<uint16_t*>(out + o.m)[r] = blk.m;
      } else if (t == DType::Q4_Z) {
        const auto& blk = reinterpret_cast<const BlockQ4_Z*>(rows[r])[b];
        const Q32Offsets o = q4z_offsets(b);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[4 * j + i];
        reinterpret_cast<uint16_t*>(out + o.d)[r] = q4z_scale_bits(blk);
        out[o.m + r] = blk.z;
      } else if (t == DType::Q2_K) {
        const auto& blk = reinterpret_cast<const BlockQ2_K*>(rows[r])[b];
        const Q2KOffsets o = q2k_offsets(b);
        for (int k = 0; k < 16; ++k) out[o.sm + (k / 2) * 2 * kPackRows + 2 * r + k % 2] = blk.scales[k];
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
        reinterpret_cast<uint16_t*>(out + o.dmin)[r] = blk.dmin;
        for (int j = 0; j < 16; ++j)
          for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[4 * j + i];
      } else if (t == DType::Q3_K) {
        const auto& blk = reinterpret_cast<const BlockQ3_K*>(rows[r])[b];
        const Q3KOffsets o = q3k_offsets(b);
        uint8_t sc[16];
        q3k_scales(blk.scales, sc);
        for (int k = 0; k < 16; ++k) out[o.sc + k * kPackRows + r] = static_cast<uint8_t>(sc[k] - 32);
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
        for (int j = 0; j < 16; ++j)
          for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[4 * j + i];
        for (int j = 0; j < 8; ++j)
          for (int i = 0; i < 4; ++i) out[o.hm + lane_byte(j, r, i)] = blk.hmask[4 * j + i];
      } else if (t == DType::IQ4_XS) {
        const auto& blk = reinterpret_cast<const BlockIQ4_XS*>(rows[r])[b];
        for (int k = 0; k < 8; ++k) {
          const Q32Offsets o = iq4xs_offsets(8 * b + k);
          for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 4; ++i) out[o.qs + lane_byte(j, r, i)] = blk.qs[16 * k + 4 * j + i];
          out[o.sc + r] = static_cast<uint8_t>(iq4xs_scale(blk, k) - 32);
          reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
        }
      } else if (t == DType::Q5_0) {
        const auto& blk = reinterpret_cast<const BlockQ5_0*>(rows[r])[b];
        const Q32Offsets o = q32_offsets(b, 320);
        uint32_t qh;
        std::memcpy(&qh, blk.qh, 4);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) {
            out[o.qs + 64 + lane_byte(j, r, i)] = blk.qs[4 * j + i];
            set_bit(out + o.qs + 16 * j, 4 * r + i, (qh >> (4 * j + i)) & 1);
            set_bit(out + o.qs + 16 * j + 8, 4 * r + i, (qh >> (16 + 4 * j + i)) & 1);
          }
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
      } else if (t == DType::Q8_0) {
        const auto& blk = reinterpret_cast<const BlockQ8_0*>(rows[r])[b];
        const Q32Offsets o = q32_offsets(b, 512);
        for (int j = 0; j < 8; ++j)
          for (int i = 0; i < 4; ++i)
            out[o.qs + lane_byte(j, r, i)] = static_cast<uint8_t>(static_cast<uint8_t>(blk.qs[4 * j + i]) ^ 0x80);
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
      } else if (t == DType::Q6_K) {
        const auto& blk = reinterpret_cast<const BlockQ6_K*>(rows[r])[b];
        const Q6KOffsets o = q6k_offsets(b);
        for (int s = 0; s < 16; ++s) out[o.sc + s * kPackRows + r] = static_cast<uint8_t>(blk.scales[s]);
        reinterpret_cast<uint16_t*>(out + o.d)[r] = blk.d;
        for (int h = 0; h < 2; ++h) {
          for (int j = 0; j < 16; ++j)
            for (int i = 0; i < 4; ++i) out[o.qs + q6k_l(h, j) + lane_byte(0, r, i)] = blk.ql[64 * h + 4 * j + i];
          for (int j = 0; j < 8; ++j)
            for (int i = 0; i < 4; ++i) out[o.qs + q6k_h(h, j) + lane_byte(0, r, i)] = blk.qh[32 * h + 4 * j + i];
        }
      } else if (t == DType::Q4_K) {
        const auto& blk = reinterpret_cast<const BlockQ4_K*>(rows[r])[b];
        pack_k4(blk.d, blk.dmin, blk.scales, blk.qs, nullptr, r, q4k_offsets(b), kQ4KChunkBytes, out);
      } else {  // Q5_K
        const auto& blk = reinterpret_cast<const BlockQ5_K*>(rows[r])[b];
        pack_k4(blk.d, blk.dmin, blk.scales, blk.qs, blk.qh, r, q4k_offsets(b, kQ5KBlockBytes), kQ5KChunkBytes,
                out);
      }
    }
}

}  // namespace

bool packing_enabled() {
  const char* env = std::getenv("FERRUM_PACK");
  return !(env && std::strcmp(env, "0") == 0);
}

bool packable(DType t, int64_t rows, int64_t cols) {
  if (rows % kPackRows != 0 || cols <= 0) return false;
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::Q4_1:
    case DType::Q4_Z:
    case DType::MXFP4:
      return cols % 32 == 0;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS:
    case DType::Q3_K:
    case DType::Q2_K:
      return cols % 256 == 0;
    case DType::F16:
    case DType::BF16:
      return cols % 32 == 0;
    default:
      return false;
  }
}

bool packable_values(const TensorView& t) {
  if (t.type != DType::MXFP4) return true;
  const int64_t nb = t.cols() / 32;
  for (int64_t r = 0; r < t.rows(); ++r) {
    const auto* blk = reinterpret_cast<const BlockMXFP4*>(t.row(r));
    for (int64_t b = 0; b < nb; ++b) {
      if (mxfp4_scale_fits_f16(blk[b].e)) continue;
      for (uint8_t q : blk[b].qs)  // a block of zeros (+0 or -0) needs no scale
        if ((q & 0x7) != 0 || (q & 0x70) != 0) return false;
    }
  }
  return true;
}

std::unique_ptr<PackedMatrix> pack_matrix(std::span<const TensorView> parts, ThreadPool& pool,
                                          WeightRounding rounding) {
  if (parts.empty()) fail("pack_matrix: no tensors");
  const DType t = rounded_type(rounding, parts[0].type);
  const int64_t cols = parts[0].cols();
  int64_t rows = 0;
  for (const TensorView& p : parts) {
    if (rounded_type(rounding, p.type) != t || p.cols() != cols)
      fail("pack_matrix: tensor '{}' ({} {}) does not match '{}' ({} {})", p.name, dtype_name(p.type),
           p.shape_string(), parts[0].name, dtype_name(t), parts[0].shape_string());
    if (!packable(t, p.rows(), cols))
      fail(
          "pack_matrix: tensor '{}' ({} {}) has no packed layout (types "
          "Q4_0/Q4_1/Q4_Z/Q5_0/Q8_0/IQ4_NL/IQ4_XS/MXFP4/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/F16/BF16, rows in "
          "multiples of 16)",
          p.name, dtype_name(t), p.shape_string());
    if (p.nbytes < p.row_bytes() * static_cast<size_t>(p.rows()))
      fail("pack_matrix: tensor '{}' has {} bytes, needs {}", p.name, p.nbytes, p.row_bytes() * p.rows());
    if (!packable_values(p))
      fail("pack_matrix: tensor '{}' has MXFP4 block scales outside F16's range; it is multiplied unpacked",
           p.name);
    rows += p.rows();
  }
  auto m = std::make_unique<PackedMatrix>();
  m->type = t;
  m->rows = rows;
  m->cols = cols;
  m->group_bytes = group_bytes(t, cols);
  const size_t total = m->group_bytes * static_cast<size_t>(rows / kPackRows);
  m->data.reset(static_cast<uint8_t*>(alloc_huge(total)));  // a gemv streams the whole matrix
  if (!m->data) fail("pack_matrix: out of memory for {} bytes ({})", total, parts[0].name);
  uint8_t* mem = m->data.get();

  // Group g -> (part, first row) lookup, then groups in parallel.
  std::vector<std::pair<const TensorView*, int64_t>> where;
  where.reserve(static_cast<size_t>(rows / kPackRows));
  for (const TensorView& p : parts)
    for (int64_t r = 0; r < p.rows(); r += kPackRows) where.emplace_back(&p, r);
  const int64_t nb = cols / dtype_info(t).block_size;
  pool.parallel_for(static_cast<int64_t>(where.size()), [&](int64_t g0, int64_t g1, int) {
    std::vector<uint16_t> rounded;  // the group's 16 rows rounded to BF16 (F16/F32 under Bf16)
    std::vector<float> tmp;
    for (int64_t g = g0; g < g1; ++g) {
      const TensorView& part = *where[g].first;
      const uint8_t* src[kPackRows];
      for (int r = 0; r < kPackRows; ++r) src[r] = part.row(where[g].second + r);
      if (rounds_to_bf16(rounding, part.type)) {
        rounded.resize(static_cast<size_t>(kPackRows * cols));
        tmp.resize(static_cast<size_t>(cols));
        for (int r = 0; r < kPackRows; ++r) {
          round_row_to_bf16(part.type, src[r], cols, &rounded[r * cols], tmp.data());
          src[r] = reinterpret_cast<const uint8_t*>(&rounded[r * cols]);
        }
      }
      pack_group(t, src, nb, mem + static_cast<size_t>(g) * m->group_bytes);
    }
  });
  return m;
}

void unpack_row(const PackedMatrix& p, int64_t row, float* out) {
  if (row < 0 || row >= p.rows) fail("unpack_row: row {} out of range ({} rows)", row, p.rows);
  const uint8_t* g = p.group(row / kPackRows);
  const int r = static_cast<int>(row % kPackRows);
  const int64_t nb = p.cols / dtype_info(p.type).block_size;
  if (p.type == DType::F16 || p.type == DType::BF16) {
    const auto* v = reinterpret_cast<const uint16_t*>(g);
    for (int64_t k = 0; k < p.cols; ++k) {
      const uint16_t h = v[float_group_index(p.type, k, r)];
      out[k] = p.type == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    return;
  }
  std::vector<uint8_t> file_row(row_size(p.type, p.cols));
  if (p.type == DType::MXFP4) {  // e back from the F16 scale (a zero block's 0: its values are 0)
    auto* blk = reinterpret_cast<BlockMXFP4*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q32Offsets o = q32_offsets(b, 256);
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = g[o.qs + lane_byte(j, r, i)];
      const float d = f16_to_f32(reinterpret_cast<const uint16_t*>(g + o.d)[r]);
      int ex = 0;
      if (d != 0) std::frexp(d, &ex);  // d = 2^(ex - 1)
      blk[b].e = d == 0 ? uint8_t{0} : static_cast<uint8_t>(ex - 1 + 128);
    }
  } else if (p.type == DType::Q4_0 || p.type == DType::IQ4_NL) {
    auto* blk = reinterpret_cast<BlockQ4_0*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q32Offsets o = q32_offsets(b, 256);
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = g[o.qs + lane_byte(j, r, i)];
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
    }
  } else if (p.type == DType::Q4_1) {
    auto* blk = reinterpret_cast<BlockQ4_1*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q32Offsets o = q41_offsets(b);
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = g[o.qs + lane_byte(j, r, i)];
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
      blk[b].m = reinterpret_cast<const uint16_t*>(g + o.m)[r];
    }
  } else if (p.type == DType::Q4_Z) {
    auto* blk = reinterpret_cast<BlockQ4_Z*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q32Offsets o = q4z_offsets(b);
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = g[o.qs + lane_byte(j, r, i)];
      set_q4z_scale(blk[b], reinterpret_cast<const uint16_t*>(g + o.d)[r]);
      blk[b].z = g[o.m + r];
    }
  } else if (p.type == DType::Q2_K) {
    auto* blk = reinterpret_cast<BlockQ2_K*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q2KOffsets o = q2k_offsets(b);
      for (int k = 0; k < 16; ++k) blk[b].scales[k] = g[o.sm + (k / 2) * 2 * kPackRows + 2 * r + k % 2];
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
      blk[b].dmin = reinterpret_cast<const uint16_t*>(g + o.dmin)[r];
      for (int j = 0; j < 16; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = g[o.qs + lane_byte(j, r, i)];
    }
  } else if (p.type == DType::Q3_K) {
    auto* blk = reinterpret_cast<BlockQ3_K*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q3KOffsets o = q3k_offsets(b);
      std::memset(blk[b].scales, 0, 12);
      for (int k = 0; k < 16; ++k) {  // packed as q3k_scales reads them
        const int sc = static_cast<int8_t>(g[o.sc + k * kPackRows + r]) + 32;
        blk[b].scales[k % 8] |= static_cast<uint8_t>((sc & 0xF) << (4 * (k / 8)));
        blk[b].scales[8 + k % 4] |= static_cast<uint8_t>((sc >> 4) << (2 * (k / 4)));
      }
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
      for (int j = 0; j < 16; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = g[o.qs + lane_byte(j, r, i)];
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 4; ++i) blk[b].hmask[4 * j + i] = g[o.hm + lane_byte(j, r, i)];
    }
  } else if (p.type == DType::IQ4_XS) {
    auto* blk = reinterpret_cast<BlockIQ4_XS*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      blk[b].scales_h = 0;
      std::memset(blk[b].scales_l, 0, 4);
      for (int k = 0; k < 8; ++k) {
        const Q32Offsets o = iq4xs_offsets(8 * b + k);
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) blk[b].qs[16 * k + 4 * j + i] = g[o.qs + lane_byte(j, r, i)];
        const int ls = static_cast<int8_t>(g[o.sc + r]) + 32;
        blk[b].scales_l[k / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (k % 2)));
        blk[b].scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * k));
        blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
      }
    }
  } else if (p.type == DType::Q5_0) {
    auto* blk = reinterpret_cast<BlockQ5_0*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q32Offsets o = q32_offsets(b, 320);
      uint32_t qh = 0;
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
          blk[b].qs[4 * j + i] = g[o.qs + 64 + lane_byte(j, r, i)];
          qh |= get_bit(g + o.qs + 16 * j, 4 * r + i) << (4 * j + i);
          qh |= get_bit(g + o.qs + 16 * j + 8, 4 * r + i) << (16 + 4 * j + i);
        }
      std::memcpy(blk[b].qh, &qh, 4);
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
    }
  } else if (p.type == DType::Q8_0) {
    auto* blk = reinterpret_cast<BlockQ8_0*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q32Offsets o = q32_offsets(b, 512);
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 4; ++i) blk[b].qs[4 * j + i] = static_cast<int8_t>(g[o.qs + lane_byte(j, r, i)] ^ 0x80);
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
    }
  } else if (p.type == DType::Q6_K) {
    auto* blk = reinterpret_cast<BlockQ6_K*>(file_row.data());
    for (int64_t b = 0; b < nb; ++b) {
      const Q6KOffsets o = q6k_offsets(b);
      for (int s = 0; s < 16; ++s) blk[b].scales[s] = static_cast<int8_t>(g[o.sc + s * kPackRows + r]);
      blk[b].d = reinterpret_cast<const uint16_t*>(g + o.d)[r];
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 16; ++j)
          for (int i = 0; i < 4; ++i) blk[b].ql[64 * h + 4 * j + i] = g[o.qs + q6k_l(h, j) + lane_byte(0, r, i)];
        for (int j = 0; j < 8; ++j)
          for (int i = 0; i < 4; ++i) blk[b].qh[32 * h + 4 * j + i] = g[o.qs + q6k_h(h, j) + lane_byte(0, r, i)];
      }
    }
  } else {
    // Q4_K / Q5_K: dequantize directly (the 6-bit scale packing is not needed to get the values back),
    // with the file's formula (d * scale) * q - (dmin * min).
    const bool q5 = p.type == DType::Q5_K;
    const size_t chunk_bytes = q5 ? kQ5KChunkBytes : kQ4KChunkBytes, nib = q5 ? kQ5KMaskBytes : 0;
    for (int64_t b = 0; b < nb; ++b) {
      const Q4KOffsets o = q4k_offsets(b, q5 ? kQ5KBlockBytes : kQ4KBlockBytes);
      const float db = f16_to_f32(reinterpret_cast<const uint16_t*>(g + o.d)[r]);
      const float mb = f16_to_f32(reinterpret_cast<const uint16_t*>(g + o.dmin)[r]);
      auto sc = [&](int j) { return g[o.sc + j * kPackRows + r]; };
      auto mn = [&](int j) { return g[o.mn + (j / 2) * 2 * kPackRows + 2 * r + j % 2]; };
      for (int c = 0; c < 4; ++c) {
        const uint8_t* chunk = g + o.qs + c * chunk_bytes;
        for (int j = 0; j < 8; ++j)
          for (int i = 0; i < 4; ++i) {
            const uint8_t q = chunk[nib + lane_byte(j, r, i)];
            const int lo = (q & 0xF) + (q5 ? 16 * static_cast<int>(get_bit(chunk + 16 * j, 4 * r + i)) : 0);
            const int hi = (q >> 4) + (q5 ? 16 * static_cast<int>(get_bit(chunk + 16 * j + 8, 4 * r + i)) : 0);
            const int e = 4 * j + i;
            out[b * 256 + 64 * c + e] = db * sc(2 * c) * lo - mb * mn(2 * c);
            out[b * 256 + 64 * c + 32 + e] = db * sc(2 * c + 1) * hi - mb * mn(2 * c + 1);
          }
      }
    }
    return;
  }
  dequantize_row(p.type, file_row.data(), out, p.cols);
}

}  // namespace ferrum::kernels
