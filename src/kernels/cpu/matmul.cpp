// Matmul driver: argument checks, activation preparation, and the split of (row chunk x token
// group) work items over the thread pool. The per-ISA kernels do the arithmetic.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "core/fail.h"
#include "core/quant.h"
#include "kernels/cpu/grid_panel.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/packed.h"
#include "kernels/cpu/packed_act.h"

namespace ferrum::kernels {
namespace {

constexpr int64_t kRowChunk = 16;    // rows per work item with many tokens: stays in L1/L2 across token tiles
constexpr int64_t kTokenGroup = 64;  // tokens per work item (Fast)
// Tokens per work item of packed F16 weights: a 16-row group is 32 bytes per input (64 KiB at 2048
// inputs), read from memory once per item, so with 64 tokens a 256-token prompt pass read every
// weight 4 times (the first token tile of an item waits on memory). 256 tokens per item: AVX2 F16
// prompt 1.02-1.14x on a Zen 3 VM (bench/README.md, session 31; AVX-512 hosts not measured).
// Quantized groups are 3-6 times smaller and 64 tokens' activations stay in L2 (Q4_K_M measured
// 0.96x with 256); BF16 (its kernel does more per byte) showed no difference.
constexpr int64_t kF16TokenGroup = 256;
// Packed F16 with many tokens, in blocks of inputs (PackedKernels::Kernel::block): an
// item is kBlockGroups groups x kBlockTokens tokens, swept one block of kBlockInputs inputs at a
// time, so a group's slice (16 KiB) stays in L1 across the token tiles and the block's activations
// (256 KiB as F32) in L2 across the groups, where a whole row (64 KiB at 2048 inputs) and a prompt's
// activations (2 MiB for 256 tokens) did not. AVX2 F16 prompt 1.07-1.15x on a Zen 3 VM (bench/README.md,
// session 32). Below kBlockMinTokens the activations fit L2 as they are.
constexpr int64_t kBlockInputs = 512, kBlockTokens = 128, kBlockGroups = 8, kBlockMinTokens = 32;
constexpr int64_t kExactGroup = 256;  // tokens per work item (Exact: one dequantization per row and group)

// Activation formats: Q8Act (32-element weight types), Q8_K (K-quants), BF16, plain F32.
enum class Act { Q8_32, Q8_K, BF16, F32 };

struct FastKernel {
  TileFn fn;
  Act act;
};

FastKernel fast_kernel(const IsaKernels& k, DType t) {
  switch (t) {
    case DType::Q4_0:
      return {k.q4_0, Act::Q8_32};
    case DType::Q5_0:
      return {k.q5_0, Act::Q8_32};
    case DType::Q5_1:
      return {k.q5_1, Act::Q8_32};
    case DType::Q8_0:
      return {k.q8_0, Act::Q8_32};
    case DType::Q4_1:
      return {k.q4_1, Act::Q8_32};
    case DType::Q4_Z:
      return {k.q4_z, Act::Q8_32};
    case DType::IQ4_NL:
      return {k.iq4_nl, Act::Q8_32};
    case DType::MXFP4:
      return {k.mxfp4, Act::Q8_32};
    case DType::Q2_K:
      return {k.lowbit.q2_k, Act::Q8_K};
    case DType::Q3_K:
      return {k.lowbit.q3_k, Act::Q8_K};
    case DType::IQ4_XS:  // a scale per 32 activations, as its packed kernels
      return {k.lowbit.iq4_xs, Act::Q8_32};
    case DType::IQ2_XXS:
      return {k.lowbit.iq2_xxs, Act::Q8_K};
    case DType::IQ2_XS:
      return {k.lowbit.iq2_xs, Act::Q8_K};
    case DType::IQ2_S:
      return {k.lowbit.iq2_s, Act::Q8_K};
    case DType::IQ3_XXS:
      return {k.lowbit.iq3_xxs, Act::Q8_K};
    case DType::IQ3_S:
      return {k.lowbit.iq3_s, Act::Q8_K};
    case DType::IQ1_S:
      return {k.lowbit.iq1_s, Act::Q8_K};
    case DType::IQ1_M:
      return {k.lowbit.iq1_m, Act::Q8_K};
    case DType::Q4_K:
      return {k.q4_k, Act::Q8_K};
    case DType::Q5_K:
      return {k.q5_k, Act::Q8_K};
    case DType::Q6_K:
      return {k.q6_k, Act::Q8_K};
    case DType::BF16:
      return {k.bf16, Act::BF16};
    case DType::F16:
      return {k.f16, Act::F32};
    case DType::F32:
      return {k.f32, Act::F32};
    default:
      return {nullptr, Act::F32};
  }
}

void check_args(const TensorView& W, int64_t rb, int64_t re, const float* x, int64_t ldx, int64_t n_tok,
                const float* y, int64_t ldy) {
  if (!fast_kernel(scalar_kernels(), W.type).fn)
    fail("matmul: tensor '{}' has type {}, which has no matmul kernel", W.name, dtype_name(W.type));
  const int64_t cols = W.cols();
  if (cols <= 0 || W.rows() < 0) fail("matmul: tensor '{}' has bad shape {}", W.name, W.shape_string());
  const uint32_t bs = dtype_info(W.type).block_size;
  if (cols % bs != 0)
    fail("matmul: tensor '{}' {} has {} inputs per row, not a multiple of the block size {}", W.name,
         dtype_name(W.type), cols, bs);
  const size_t need = W.row_bytes() * static_cast<size_t>(W.rows());  // throws on a partial block
  if (W.rows() > 0 && !W.data) fail("matmul: tensor '{}' has no data", W.name);
  if (W.nbytes < need)
    fail("matmul: tensor '{}' {} {} needs {} bytes, has {}", W.name, dtype_name(W.type), W.shape_string(),
         need, W.nbytes);
  if (rb < 0 || re < rb || re > W.rows())
    fail("matmul: rows [{}, {}) out of range for tensor '{}' with {} rows", rb, re, W.name, W.rows());
  if (n_tok < 0) fail("matmul: negative token count {} for tensor '{}'", n_tok, W.name);
  if (n_tok > 0 && (!x || !y)) fail("matmul: null activation/output pointer for tensor '{}'", W.name);
  if (n_tok > 1 && ldx < cols)
    fail("matmul: activation stride {} < {} inputs of tensor '{}'", ldx, cols, W.name);
  if (n_tok > 1 && ldy < re - rb)
    fail("matmul: output stride {} < {} rows of tensor '{}'", ldy, re - rb, W.name);
}

template <typename T>
T* grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Runs body(row_begin, row_end, tok_begin, tok_end, ith) over all work items, dynamically balanced.
// Below this many multiply-adds a matmul runs on the calling thread: waking the pool costs more.
constexpr int64_t kInlineMacs = 1 << 16;

// Rows per work item. With one tile of tokens (decode) there is no reuse across token tiles, so the
// items are larger (about 8 per thread): every claim is an atomic on a line shared by all threads.
int64_t row_chunk(int64_t rows, int64_t n_tok, int n_threads, int tile) {
  if (n_tok > tile) return kRowChunk;
  const int64_t per = (rows + 8 * n_threads - 1) / (8 * n_threads);
  return std::clamp<int64_t>((per + kRowChunk - 1) / kRowChunk * kRowChunk, kRowChunk, 512);
}

// Prepares every token's activations into rows of `stride` bytes of the scratch buffer:
// convert(t, out) for t < n_tok, over the pool when there is enough work. Returns the buffer.
template <typename Convert>
uint8_t* prepare_activations(ThreadPool& pool, MatmulScratch& scratch, int64_t n_tok, int64_t cols, size_t stride,
                             Convert&& convert) {
  uint8_t* buf = grow(scratch.act, stride * n_tok);
  auto prep = [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) convert(t, buf + t * stride);
  };
  if (n_tok > 1 && n_tok * cols >= kInlineMacs / 8)
    pool.parallel_for(n_tok, prep);
  else
    prep(0, n_tok, 0);
  return buf;
}

// The lane kernels' activations (packed_act.h): every tile of kLaneTokens tokens of the prepared
// rows interleaved, tile k at k * lane_act_bytes(cols) from the returned (64-byte aligned) address.
const uint8_t* interleave_tiles(ThreadPool& pool, MatmulScratch& scratch, const uint8_t* act, size_t stride,
                                int64_t n_tok, int64_t cols) {
  static_assert(kTokenGroup % kLaneTokens == 0, "work items start on a tile");
  const int64_t n_tiles = (n_tok + kLaneTokens - 1) / kLaneTokens;
  const size_t tile_bytes = lane_act_bytes(cols);
  uint8_t* buf = grow(scratch.lanes, tile_bytes * n_tiles + 63);
  uint8_t* out = buf + (-reinterpret_cast<uintptr_t>(buf) & 63);  // the kernels' aligned loads
  auto tiles = [&](int64_t k0, int64_t k1, int) {
    for (int64_t k = k0; k < k1; ++k) {
      const int nt = static_cast<int>(std::min<int64_t>(kLaneTokens, n_tok - k * kLaneTokens));
      interleave_lane_tokens(act + k * kLaneTokens * stride, stride, nt, cols, out + k * tile_bytes);
    }
  };
  if (n_tiles > 1)
    pool.parallel_for(n_tiles, tiles);
  else
    tiles(0, 1, 0);  // a batch of decoding sequences: not worth waking the pool
  return out;
}

template <typename Body>
void for_items(ThreadPool& pool, int64_t rows, int64_t cols, int64_t n_tok, int64_t group, Body&& body,
               int tile = kMaxTile) {
  const int64_t chunk = row_chunk(rows, n_tok, pool.size(), tile);
  const int64_t n_rc = (rows + chunk - 1) / chunk;
  const int64_t n_tg = (n_tok + group - 1) / group;
  const int64_t n_items = n_rc * n_tg;
  std::atomic<int64_t> next{0};
  auto work = [&](int ith, int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_items;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t rc = i % n_rc, tg = i / n_rc;
      body(rc * chunk, std::min(rows, (rc + 1) * chunk), tg * group, std::min(n_tok, (tg + 1) * group), ith);
    }
  };
  if (n_items == 1 || rows * cols * n_tok < kInlineMacs)
    work(0, 1);
  else
    pool.run(work);
}

// Dequantizes up to kMaxRows rows (bit-exact) and runs the F32 tile kernel on them: F32 activations,
// F32 accumulation.
void run_exact(const TensorView& W, int64_t rb, int64_t re, const float* x, int64_t ldx, int64_t n_tok,
               float* y, int64_t ldy, ThreadPool& pool, MatmulScratch& scratch) {
  const IsaKernels& k = active_kernels();
  const int64_t cols = W.cols();
  const size_t per_thread = static_cast<size_t>(cols) * kMaxRows;
  float* bufs = grow(scratch.rows, per_thread * pool.size());
  const auto* xa = reinterpret_cast<const uint8_t*>(x);
  const size_t xs = static_cast<size_t>(ldx) * sizeof(float);
  for_items(
      pool, re - rb, cols, n_tok, kExactGroup, [&](int64_t r0, int64_t r1, int64_t t0, int64_t t1, int ith) {
        float* buf = bufs + ith * per_thread;
        for (int64_t r = r0; r < r1; r += kMaxRows) {
          const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, r1 - r));
          const uint8_t* w = W.row(rb + r);
          size_t ws = W.row_bytes();
          if (W.type != DType::F32) {
            for (int i = 0; i < nr; ++i) {
              if (W.type == DType::F16)
                k.f16_to_f32(reinterpret_cast<const uint16_t*>(W.row(rb + r + i)), buf + i * cols, cols);
              else
                dequantize_row(W.type, W.row(rb + r + i), buf + i * cols, cols);
            }
            w = reinterpret_cast<const uint8_t*>(buf);
            ws = static_cast<size_t>(cols) * sizeof(float);
          }
          for (int64_t t = t0; t < t1; t += kMaxTile) {
            const int nt = static_cast<int>(std::min<int64_t>(kMaxTile, t1 - t));
            k.f32(w, ws, nr, cols, xa + t * xs, xs, nt, y + t * ldy + r, ldy);
          }
        }
      });
}

LowbitRows::PanelFn panel_kernel(const LowbitRows& k, DType t) {
  switch (t) {
    case DType::IQ2_XXS:
      return k.iq2_xxs_panel;
    case DType::IQ2_XS:
      return k.iq2_xs_panel;
    case DType::IQ2_S:
      return k.iq2_s_panel;
    case DType::IQ3_XXS:
      return k.iq3_xxs_panel;
    case DType::IQ3_S:
      return k.iq3_s_panel;
    case DType::IQ1_S:
      return k.iq1_s_panel;
    case DType::IQ1_M:
      return k.iq1_m_panel;
    default:
      return nullptr;
  }
}

// The grid i-quants with many tokens: each work item (16 rows x 64 tokens) decodes its rows once
// into a panel (grid_panel.h). The same bits as the row kernels.
void run_panel(const TensorView& W, LowbitRows::PanelFn fn, int64_t rb, int64_t re, const float* x,
               int64_t ldx, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool, MatmulScratch& scratch) {
  const IsaKernels& k = active_kernels();
  const int64_t cols = W.cols(), nb = cols / 256;
  const size_t stride = (panel_act_bytes(cols) + 63) / 64 * 64;
  const uint8_t* act = prepare_activations(pool, scratch, n_tok, cols, stride, [&](int64_t t, uint8_t* out) {
    auto* levels = reinterpret_cast<int16_t*>(out);
    auto* d = reinterpret_cast<float*>(out + 2 * cols);
    BlockQ8_K q;
    for (int64_t b = 0; b < nb; ++b) {
      k.quantize_q8_k(x + t * ldx + 256 * b, &q, 256);
      k.lowbit.panel_act(q, levels + 256 * b);
      d[b] = q.d;
    }
  });
  static_assert(kRowChunk == kPanelRows, "a work item's rows are one panel");
  const size_t per_thread = (panel_bytes(cols) + 63) / 64 * 64;
  uint8_t* panels = grow(scratch.panels, per_thread * pool.size());
  for_items(pool, re - rb, cols, n_tok, kTokenGroup,
            [&](int64_t r0, int64_t r1, int64_t t0, int64_t t1, int ith) {
              fn(W.row(rb + r0), W.row_bytes(), static_cast<int>(r1 - r0), cols, act + t0 * stride, stride,
                 static_cast<int>(t1 - t0), y + t0 * ldy + r0, ldy, panels + ith * per_thread);
            });
}

void run_fast(const TensorView& W, int64_t rb, int64_t re, const float* x, int64_t ldx, int64_t n_tok,
              float* y, int64_t ldy, ThreadPool& pool, MatmulScratch& scratch) {
  const IsaKernels& k = active_kernels();
  if (const auto panel = panel_kernel(k.lowbit, W.type); panel && n_tok >= kPanelMinTokens)
    return run_panel(W, panel, rb, re, x, ldx, n_tok, y, ldy, pool, scratch);
  const FastKernel fk = fast_kernel(k, W.type);
  const int64_t cols = W.cols();
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  size_t stride = static_cast<size_t>(ldx) * sizeof(float);
  if (fk.act != Act::F32) {
    size_t row = fk.act == Act::Q8_32  ? q8act_bytes(cols)
                 : fk.act == Act::Q8_K ? static_cast<size_t>(cols / 256) * sizeof(BlockQ8_K)
                                       : static_cast<size_t>(cols) * 2;
    stride = (row + 63) / 64 * 64;
    act = prepare_activations(pool, scratch, n_tok, cols, stride, [&](int64_t t, uint8_t* out) {
      const float* xt = x + t * ldx;
      if (fk.act == Act::Q8_32)
        k.quantize_q8_1f(xt, out, cols);
      else if (fk.act == Act::Q8_K)
        k.quantize_q8_k(xt, reinterpret_cast<BlockQ8_K*>(out), cols);
      else
        quantize_row(DType::BF16, xt, out, cols);
    });
  }
  for_items(
      pool, re - rb, cols, n_tok, kTokenGroup, [&](int64_t r0, int64_t r1, int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; t += kMaxTile) {
          const int nt = static_cast<int>(std::min<int64_t>(kMaxTile, t1 - t));
          for (int64_t r = r0; r < r1; r += kMaxRows) {
            const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, r1 - r));
            fk.fn(W.row(rb + r), W.row_bytes(), nr, cols, act + t * stride, stride, nt, y + t * ldy + r, ldy);
          }
        }
      });
}

// A packed F16 matrix (32 bytes per input and group) in blocks of inputs (kBlockInputs); F32
// activations in rows of `stride` bytes.
void f16_in_blocks(const PackedMatrix& P, const PackedKernels::Kernel& kern, int64_t g0, int64_t rows,
                   const uint8_t* act, size_t stride, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool,
                   MatmulScratch& scratch) {
  const int64_t cols = P.cols, n_groups = rows / kPackRows;
  const int64_t n_gc = (n_groups + kBlockGroups - 1) / kBlockGroups;
  const int64_t n_items = n_gc * ((n_tok + kBlockTokens - 1) / kBlockTokens);
  const size_t per_thread = static_cast<size_t>(kBlockGroups * kBlockTokens * 32);
  float* parts = grow(scratch.rows, per_thread * pool.size());
  std::atomic<int64_t> next{0};
  auto work = [&](int ith, int) {
    float* part = parts + ith * per_thread;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_items;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t gb = i % n_gc * kBlockGroups, ge = std::min(n_groups, gb + kBlockGroups);
      const int64_t t0 = i / n_gc * kBlockTokens, t1 = std::min(n_tok, t0 + kBlockTokens);
      for (int64_t k0 = 0; k0 < cols; k0 += kBlockInputs) {
        const int64_t n = std::min(kBlockInputs, cols - k0);
        const int step =
            (k0 == 0 ? PackedKernels::kFirstBlock : 0) | (k0 + n == cols ? PackedKernels::kLastBlock : 0);
        for (int64_t g = gb; g < ge; ++g)
          for (int64_t t = t0; t < t1; t += kern.max_nt)
            kern.block(P.group(g0 + g) + 32 * k0, n, act + t * stride + k0 * sizeof(float), stride,
                       static_cast<int>(std::min<int64_t>(kern.max_nt, t1 - t)),
                       part + ((g - gb) * kBlockTokens + (t - t0)) * 32, step, y + t * ldy + g * kPackRows,
                       ldy);
      }
    }
  };
  if (n_items == 1)
    work(0, 1);
  else
    pool.run(work);
}

}  // namespace

bool packed_kernels_active() {
  return active_kernels().packed != nullptr;
}

bool packed_kernel_for(DType t) {
  const PackedKernels* p = active_kernels().packed;
  return p && p->has(t);
}

// The packed layouts' types and their kernels in PackedKernels.
constexpr std::pair<DType, PackedKernels::Kernel PackedKernels::*> kPackedTypes[] = {
    {DType::Q4_0, &PackedKernels::q4_0},     {DType::Q4_1, &PackedKernels::q4_1},
    {DType::Q5_0, &PackedKernels::q5_0},     {DType::Q8_0, &PackedKernels::q8_0},
    {DType::IQ4_NL, &PackedKernels::iq4_nl}, {DType::IQ4_XS, &PackedKernels::iq4_xs},
    {DType::Q2_K, &PackedKernels::q2_k},     {DType::Q3_K, &PackedKernels::q3_k},
    {DType::Q4_K, &PackedKernels::q4_k},     {DType::Q5_K, &PackedKernels::q5_k},
    {DType::Q6_K, &PackedKernels::q6_k},     {DType::BF16, &PackedKernels::bf16},
    {DType::F16, &PackedKernels::f16},       {DType::MXFP4, &PackedKernels::mxfp4},
    {DType::Q4_Z, &PackedKernels::q4_z}};

// The tier's kernel for packed matrices of type t, or null (no layout, or none on this tier).
const PackedKernels::Kernel* PackedKernels::find(DType t) const {
  for (const auto& [type, member] : kPackedTypes)
    if (type == t) return (this->*member).fn ? &(this->*member) : nullptr;
  return nullptr;
}

const PackedKernels::Kernel& PackedKernels::of(DType t) const {
  if (const Kernel* k = find(t)) return *k;
  fail("packed matrices of type {} have no kernel", dtype_name(t));
}

bool PackedKernels::has(DType t) const {
  return find(t) != nullptr;
}

void matmul_packed(const PackedMatrix& P, const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy,
                   ThreadPool& pool, MatmulScratch& scratch) {
  matmul_packed_rows(P, 0, P.rows, x, ldx, n_tok, y, ldy, pool, scratch);
}

void matmul_packed_rows(const PackedMatrix& P, int64_t row_begin, int64_t row_end, const float* x,
                        int64_t ldx, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool,
                        MatmulScratch& scratch) {
  const IsaKernels& isa = active_kernels();
  if (!isa.packed) fail("matmul_packed: the {} kernels have no packed layouts", isa.name);
  if (row_begin < 0 || row_end > P.rows || row_begin > row_end || row_begin % kPackRows != 0 ||
      (row_end % kPackRows != 0 && row_end != P.rows))
    fail("matmul_packed: rows [{}, {}) are not whole 16-row groups of a {}-row matrix", row_begin, row_end,
         P.rows);
  const int64_t rows = row_end - row_begin;
  if (n_tok < 0 || (n_tok > 0 && (!x || !y)))
    fail("matmul_packed: bad activations for a {}x{} matrix", P.rows, P.cols);
  if (n_tok > 1 && (ldx < P.cols || ldy < rows)) fail("matmul_packed: strides {} / {} too small", ldx, ldy);
  if (n_tok == 0 || rows == 0) return;
  const PackedKernels::Kernel kern = isa.packed->of(P.type);
  const int64_t cols = P.cols;
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  size_t stride = static_cast<size_t>(ldx) * sizeof(float);
  if (P.type != DType::F16) {  // F16 weights multiply the F32 activations as they are
    stride = (packed_act_bytes(P.type, cols) + 63) / 64 * 64;
    act = prepare_activations(pool, scratch, n_tok, cols, stride, [&](int64_t t, uint8_t* out) {
      prep_packed_act(isa, P.type, x + t * ldx, out, cols);
    });
  }
  const uint8_t* lanes = nullptr;
  if (kern.lanes && n_tok >= PackedKernels::kLaneMinTokens)
    lanes = interleave_tiles(pool, scratch, act, stride, n_tok, cols);
  const int64_t g0 = row_begin / kPackRows;
  if (P.type == DType::F16 && kern.block && n_tok >= kBlockMinTokens && cols > kBlockInputs &&
      rows % kPackRows == 0)
    return f16_in_blocks(P, kern, g0, rows, act, stride, n_tok, y, ldy, pool, scratch);
  for_items(
      pool, rows, cols, n_tok, P.type == DType::F16 ? kF16TokenGroup : kTokenGroup,
      [&](int64_t r0, int64_t r1, int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; t += kern.max_nt) {
          const int nt = static_cast<int>(std::min<int64_t>(kern.max_nt, t1 - t));
          const uint8_t* tile = nt >= PackedKernels::kLaneMinTokens && lanes
                                    ? lanes + t / kLaneTokens * lane_act_bytes(cols)
                                    : nullptr;
          for (int64_t r = r0; r < r1; r += kPackRows) {
            if (tile)
              kern.lanes(P.group(g0 + r / kPackRows), cols, tile, nt, y + t * ldy + r, ldy);
            else
              kern.fn(P.group(g0 + r / kPackRows), cols, act + t * stride, stride, nt, y + t * ldy + r, ldy);
          }
        }
      },
      kern.max_nt);
}

void matmul_rows(const TensorView& W, int64_t row_begin, int64_t row_end, const float* x, int64_t ldx,
                 int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool, Precision prec,
                 MatmulScratch& scratch) {
  check_args(W, row_begin, row_end, x, ldx, n_tok, y, ldy);
  if (n_tok == 0 || row_end == row_begin) return;
  if (prec == Precision::Exact)
    run_exact(W, row_begin, row_end, x, ldx, n_tok, y, ldy, pool, scratch);
  else
    run_fast(W, row_begin, row_end, x, ldx, n_tok, y, ldy, pool, scratch);
}

void matmul(const TensorView& W, const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy,
            ThreadPool& pool, Precision prec, MatmulScratch& scratch) {
  matmul_rows(W, 0, W.rows(), x, ldx, n_tok, y, ldy, pool, prec, scratch);
}

}  // namespace ferrum::kernels
