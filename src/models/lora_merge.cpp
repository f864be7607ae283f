#include "models/lora_merge.h"

#include <map>
#include <vector>

#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/model_config_gguf.h"
#include "models/lora_adapter.h"

namespace ferrum {
namespace {

// Element i of an F32/F16 matrix.
double at(const TensorView& m, int64_t i) {
  if (m.type == DType::F16) return f16_to_f32(reinterpret_cast<const uint16_t*>(m.data)[i]);
  return reinterpret_cast<const float*>(m.data)[i];
}

// The base tensors a site's fused output rows live in: (name, first fused row) in row order.
std::vector<std::pair<std::string, int64_t>> site_tensors(const gguf::File& g, const ModelConfig& c, int l,
                                                          LoraSite s) {
  auto name = [&](const char* n) { return fmt::format("blk.{}.{}.weight", l, n); };
  switch (s) {
    case LoraSite::Qkv:
      if (g.find_tensor(name("attn_qkv"))) return {{name("attn_qkv"), 0}};
      return {{name("attn_q"), 0}, {name("attn_k"), c.q_dim()}, {name("attn_v"), c.q_dim() + c.kv_dim()}};
    case LoraSite::Out:
      return {{name("attn_output"), 0}};
    case LoraSite::GateUp:
      if (g.find_tensor(name("ffn_gate_up"))) return {{name("ffn_gate_up"), 0}};
      return {{name("ffn_gate"), 0}, {name("ffn_up"), c.n_ff}};
    case LoraSite::Down:
      return {{name("ffn_down"), 0}};
  }
  return {};
}

// Adds scale * B A of every slot to the F32 rows of the fused output [row0, row0 + rows).
void add_deltas(const LoraSiteWeights& w, int64_t row0, int64_t rows, float* dst) {
  const int64_t in = w.a.ne[0];
  std::vector<double> acc(in);
  for (const LoraSlot& s : w.slots) {
    const int64_t out = s.bt.ne[0], r = s.bt.ne[1];
    for (int64_t o = std::max(s.col0, row0); o < std::min(s.col0 + out, row0 + rows); ++o) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < r; ++j) {
        const double b = at(s.bt, j * out + (o - s.col0)) * s.scale;
        for (int64_t i = 0; i < in; ++i) acc[i] += b * at(w.a, (s.rank0 + j) * in + i);
      }
      float* row = dst + (o - row0) * in;
      for (int64_t i = 0; i < in; ++i) row[i] = static_cast<float>(row[i] + acc[i]);
    }
  }
}

}  // namespace

int export_lora(const std::string& base_gguf, std::span<const LoraSpec> specs, const std::string& out,
                std::optional<DType> out_type, const ProgressFn& progress) {
  auto g = gguf::File::open(base_gguf);
  const ModelConfig c = config_from_gguf(*g);
  if (c.is_encoder()) fail("{}: LoRA adapters are for decoders; this is an encoder", base_gguf);
  const auto adapter = load_lora_for(c, specs);
  std::map<std::string, std::vector<uint8_t>> merged;  // tensor name -> new data
  std::map<std::string, DType> merged_type;
  for (int l = 0; l < c.n_layer; ++l)
    for (int si = 0; si < kLoraSites; ++si) {
      const LoraSiteWeights& w = adapter->layers[l].sites[si];
      if (!w.a.data) continue;
      for (const auto& [name, row0] : site_tensors(*g, c, l, static_cast<LoraSite>(si))) {
        const TensorView& t = g->tensor(name);
        const int64_t cols = t.ne[0], rows = t.rows();
        if (cols != w.a.ne[0])
          fail("{}: tensor '{}' has {} columns, the adapter's matrices {}", base_gguf, name, cols, w.a.ne[0]);
        std::vector<float> f(cols * rows);
        for (int64_t r = 0; r < rows; ++r) dequantize_row(t.type, t.row(r), &f[r * cols], cols);
        add_deltas(w, row0, rows, f.data());
        const DType to = out_type.value_or(t.type);
        std::vector<uint8_t>& dst = merged[name];
        dst.resize(row_size(to, cols) * rows);
        for (int64_t r = 0; r < rows; ++r)
          quantize_row(to, &f[r * cols], dst.data() + r * row_size(to, cols), cols);
        merged_type[name] = to;
      }
    }
  gguf::Writer wr;
  wr.copy_metadata_from(*g);
  for (const TensorView& t : g->tensors()) {
    const auto m = merged.find(t.name);
    if (m == merged.end()) {
      wr.add_tensor(t);
    } else {
      std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + std::max(t.n_dims, 1));
      wr.add_tensor(t.name, merged_type[t.name], ne, m->second.data(), m->second.size());
    }
  }
  wr.write(out, progress);
  return static_cast<int>(merged.size());
}

}  // namespace ferrum
