#include "formats/hf_gpt_oss.h"

#include <cstring>
#include <regex>

#include "core/fail.h"
#include "core/quant.h"
#include "core/quant_mxfp4.h"

namespace ferrum::hfconv {
namespace {

// Which rows of a fused [gate0, up0, gate1, up1, ...] stack to take.
enum class Rows { All, Even, Odd };

int64_t rows_taken(int64_t rows, Rows which) {
  return which == Rows::All ? rows : rows / 2;
}
int64_t source_row(int64_t r, Rows which) {
  return which == Rows::All ? r : 2 * r + (which == Rows::Odd);
}

// One HF MXFP4 block (16 bytes, element 2j low and 2j + 1 high in byte j) as a ggml block.
void hf_block_to_ggml(const uint8_t* hf, uint8_t e, BlockMXFP4& out) {
  uint8_t v[32];
  for (int j = 0; j < 16; ++j) {
    v[2 * j] = hf[j] & 0x0F;
    v[2 * j + 1] = hf[j] >> 4;
  }
  out.e = e;
  for (int j = 0; j < 16; ++j) out.qs[j] = static_cast<uint8_t>(v[j] | (v[j + 16] << 4));
}

struct Namer {
  const safetensors::Tensors& st;
  std::string prefix;  // model.layers.<L>.mlp.experts.
  const TensorView& get(const std::string& part) const { return st.get(prefix + part); }
  const TensorView* find(const std::string& part) const { return st.find(prefix + part); }
};

void expect_shape(const TensorView& t, std::initializer_list<int64_t> ne, DType type,
                  const std::string& src) {
  bool ok = t.type == type && t.n_dims == static_cast<int>(ne.size());
  int i = 0;
  for (int64_t v : ne) ok = ok && t.ne[i++] == v;
  if (!ok) {
    std::string want;
    for (auto it = std::rbegin(ne); it != std::rend(ne); ++it)
      want += (want.empty() ? "" : ", ") + std::to_string(*it);
    fail("{}: tensor '{}' is {} {}, expected {} [{}]", src, t.name, dtype_name(t.type), t.shape_string(),
         type == DType::I8 ? "U8" : dtype_name(type), want);
  }
}

// MXFP4 experts: blocks [E, rows, cols/32, 16] and scales [E, rows, cols/32] -> ggml MXFP4 {cols, rows', E}.
OutTensor mxfp4_stack(const Namer& n, const std::string& proj, int64_t E, int64_t rows, int64_t cols,
                      Rows which, const std::string& gguf, const std::function<uint8_t*(size_t)>& alloc) {
  if (cols % 32 != 0)
    fail("{}: '{}{}_blocks' has rows of {} values, not a whole number of 32-value MXFP4 blocks",
         n.st.source(), n.prefix, proj, cols);
  const int64_t nb = cols / 32;
  const TensorView& b = n.get(proj + "_blocks");
  const TensorView& s = n.get(proj + "_scales");
  expect_shape(b, {16, nb, rows, E}, DType::I8, n.st.source());
  expect_shape(s, {nb, rows, E}, DType::I8, n.st.source());
  const int64_t out_rows = rows_taken(rows, which);
  const size_t bytes = static_cast<size_t>(E * out_rows * nb) * sizeof(BlockMXFP4);
  auto* dst = reinterpret_cast<BlockMXFP4*>(alloc(bytes));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < out_rows; ++r) {
      const int64_t sr = e * rows + source_row(r, which);
      for (int64_t j = 0; j < nb; ++j)
        hf_block_to_ggml(b.data + (sr * nb + j) * 16, s.data[sr * nb + j], dst[(e * out_rows + r) * nb + j]);
    }
  return {gguf, DType::MXFP4, {cols, out_rows, E}, dst, bytes};
}

// Unquantized experts [E, cols, rows] (input-major, as gpt-oss's checkpoint keeps them) -> {cols, rows', E}.
OutTensor dense_stack(const Namer& n, const std::string& proj, int64_t E, int64_t rows, int64_t cols,
                      Rows which, const std::string& gguf, const std::function<uint8_t*(size_t)>& alloc) {
  const TensorView& t = n.get(proj);
  if (t.type != DType::F32 && t.type != DType::F16 && t.type != DType::BF16)
    fail("{}: tensor '{}' has type {}, expected F32, F16 or BF16", n.st.source(), t.name, dtype_name(t.type));
  expect_shape(t, {rows, cols, E}, t.type, n.st.source());
  const size_t es = dtype_info(t.type).type_size;
  const int64_t out_rows = rows_taken(rows, which);
  const size_t bytes = static_cast<size_t>(E * out_rows * cols) * es;
  uint8_t* dst = alloc(bytes);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < out_rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(dst + ((e * out_rows + r) * cols + c) * es,
                    t.data + ((e * cols + c) * rows + source_row(r, which)) * es, es);
  return {gguf, t.type, {cols, out_rows, E}, dst, bytes};
}

// Biases [E, rows] -> F32 {rows', E}.
OutTensor bias_stack(const Namer& n, const std::string& proj, int64_t E, int64_t rows, Rows which,
                     const std::string& gguf, const std::function<uint8_t*(size_t)>& alloc) {
  const TensorView& t = n.get(proj + "_bias");
  expect_shape(t, {rows, E}, t.type, n.st.source());
  std::vector<float> row(static_cast<size_t>(rows));
  const int64_t out_rows = rows_taken(rows, which);
  auto* dst = reinterpret_cast<float*>(alloc(static_cast<size_t>(E * out_rows) * sizeof(float)));
  const size_t row_bytes = row_size(t.type, rows);
  for (int64_t e = 0; e < E; ++e) {
    dequantize_row(t.type, t.data + e * row_bytes, row.data(), rows);
    for (int64_t r = 0; r < out_rows; ++r) dst[e * out_rows + r] = row[source_row(r, which)];
  }
  return {gguf, DType::F32, {out_rows, E}, dst, static_cast<size_t>(E * out_rows) * sizeof(float)};
}

}  // namespace

bool is_gpt_oss_expert_part(const std::string& hf_name) {
  static const std::regex re(
      R"(model\.layers\.\d+\.mlp\.experts\.(gate_up|down)_proj(_blocks|_scales|_bias)?)");
  return std::regex_match(hf_name, re);
}

std::vector<OutTensor> gpt_oss_experts(const safetensors::Tensors& st, const ModelConfig& m, int layer,
                                       const std::function<uint8_t*(size_t)>& alloc) {
  const Namer n{st, fmt::format("model.layers.{}.mlp.experts.", layer)};
  const int64_t E = m.n_expert, d = m.n_embd, ff = m.n_ff_expert;
  const std::string B = fmt::format("blk.{}.", layer);
  const bool mxfp4 = n.find("gate_up_proj_blocks") != nullptr;
  auto matrix = [&](const std::string& proj, int64_t rows, int64_t cols, Rows which, const std::string& g) {
    return mxfp4 ? mxfp4_stack(n, proj, E, rows, cols, which, g, alloc)
                 : dense_stack(n, proj, E, rows, cols, which, g, alloc);
  };
  return {matrix("gate_up_proj", 2 * ff, d, Rows::Even, B + "ffn_gate_exps.weight"),
          matrix("gate_up_proj", 2 * ff, d, Rows::Odd, B + "ffn_up_exps.weight"),
          matrix("down_proj", d, ff, Rows::All, B + "ffn_down_exps.weight"),
          bias_stack(n, "gate_up_proj", E, 2 * ff, Rows::Even, B + "ffn_gate_exps.bias", alloc),
          bias_stack(n, "gate_up_proj", E, 2 * ff, Rows::Odd, B + "ffn_up_exps.bias", alloc),
          bias_stack(n, "down_proj", E, d, Rows::All, B + "ffn_down_exps.bias", alloc)};
}

}  // namespace ferrum::hfconv
