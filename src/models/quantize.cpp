#include "models/quantize.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include "core/fail.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"

namespace ferrum {
namespace {

struct Preset {
  DType base;
  bool mixed;  // *_M: output and some attn_v / ffn_down get Q6_K
};

Preset parse_preset(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  if (s == "Q4_K_M") return {DType::Q4_K, true};
  if (s == "Q5_K_M") return {DType::Q5_K, true};
  if (s == "Q4_K_S") return {DType::Q4_K, false};
  if (s == "Q5_K_S") return {DType::Q5_K, false};
  auto t = dtype_from_name(s);
  if (!t || !dtype_info(*t).supported || *t == DType::Q8_K)
    fail("unknown quantization type '{}' (use Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M, F16, BF16, F32)", s);
  return {*t, false};
}

// llama.cpp's rule for which layers get more bits in the _M mixes.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

bool is_quantizable(const TensorView& t) {
  const std::string& n = t.name;
  if (t.n_dims < 2) return false;  // norms, biases
  if (n.size() < 7 || n.compare(n.size() - 7, 7, ".weight") != 0) return false;
  if (n.find("_norm") != std::string::npos || n == "rope_freqs.weight") return false;
  if (n.find("ffn_gate_inp") != std::string::npos) return false;  // MoE router stays F32
  if (n.find("position_embd") != std::string::npos || n.find("token_types") != std::string::npos) return false;
  return true;
}

// `is_output`: the matrix that produces the logits: output.weight, or token_embd.weight when the
// embeddings are tied (no output.weight), as llama-quantize decides.
DType choose_type(const TensorView& t, const Preset& p, int n_layer, bool is_output) {
  DType want = p.base;
  const std::string& n = t.name;
  if (is_output && (p.mixed || p.base == DType::Q4_0 || p.base == DType::Q5_0 || p.base == DType::Q5_1 ||
                               p.base == DType::Q4_K || p.base == DType::Q5_K))
    want = DType::Q6_K;
  if (p.mixed) {
    const int l = layer_of(n);
    if (l >= 0 && (n.find("attn_v.weight") != std::string::npos || n.find("ffn_down") != std::string::npos) &&
        use_more_bits(l, n_layer))
      want = DType::Q6_K;
  }
  // Fall back when rows do not split into whole blocks (as llama.cpp does for K-quants).
  auto fits = [&](DType d) { return t.ne[0] % dtype_info(d).block_size == 0; };
  if (!fits(want)) {
    if (want == DType::Q4_K) want = DType::Q5_0;
    else if (want == DType::Q5_K) want = DType::Q5_1;
    else if (want == DType::Q6_K) want = DType::Q8_0;
    if (!fits(want)) want = DType::F16;
  }
  return want;
}

}  // namespace

int quantize_model(const std::string& in_path, const std::string& out_path, const std::string& preset_name, int n_threads) {
  const Preset preset = parse_preset(preset_name);
  auto in = gguf::File::open(in_path);
  const std::string arch = in->find_string("general.architecture").value_or("llama");
  const int n_layer = static_cast<int>(in->find_uint(arch + ".block_count").value_or(1));
  gguf::Writer w;
  w.copy_metadata_from(*in);
  ThreadPool pool(n_threads);
  std::vector<std::vector<uint8_t>> buffers;
  buffers.reserve(in->tensors().size());
  int converted = 0;
  bool has_output = false;
  for (const TensorView& t : in->tensors()) has_output = has_output || t.name == "output.weight";
  for (const TensorView& t : in->tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (!is_quantizable(t)) {
      w.add_tensor(t);
      continue;
    }
    const bool is_output = t.name == "output.weight" || (!has_output && t.name == "token_embd.weight");
    const DType to = choose_type(t, preset, n_layer, is_output);
    if (to == t.type) {
      w.add_tensor(t);
      continue;
    }
    const int64_t cols = t.ne[0], rows = t.rows();
    const size_t out_row = row_size(to, cols);
    buffers.emplace_back(out_row * rows);
    uint8_t* dst = buffers.back().data();
    pool.parallel_for(rows, [&](int64_t b, int64_t e, int) {
      std::vector<float> tmp(cols);
      for (int64_t r = b; r < e; ++r) {
        dequantize_row(t.type, t.row(r), tmp.data(), cols);
        quantize_row(to, tmp.data(), dst + r * out_row, cols);
      }
    });
    w.add_tensor(t.name, to, ne, dst, out_row * rows);
    ++converted;
  }
  // llama_ftype ids as llama.cpp writes them in general.file_type.
  static const std::map<std::string, uint32_t> kFileType = {
      {"F32", 0}, {"F16", 1}, {"Q4_0", 2}, {"Q8_0", 7}, {"Q5_0", 8}, {"Q5_1", 9}, {"Q4_K_S", 14}, {"Q4_K_M", 15},
      {"Q5_K_S", 16}, {"Q5_K_M", 17}, {"Q6_K", 18}, {"BF16", 32}, {"Q4_K", 15}, {"Q5_K", 17}};
  std::string up = preset_name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (auto it = kFileType.find(up); it != kFileType.end()) w.set_u32("general.file_type", it->second);
  w.write(out_path);
  return converted;
}

}  // namespace ferrum
