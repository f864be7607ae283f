// The in-memory form of a LoRA adapter (ferrum/lora.h) and how adapter files become one.
//
// A file holds pairs (A: r x in, B: out x r) per layer and target. The decoder computes q|k|v as
// one fused product and gate|up as another, so the pairs are grouped by the product ("site")
// whose output they add to: per layer and site, the A matrices of all its targets are stacked
// into one (R x in, one product u = x A^T for all of them) and each target keeps its B with the
// output columns it adds to (q at 0, k at q_dim, v at q_dim + kv_dim; gate at 0, up at n_ff).
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ferrum/lora.h"
#include "ferrum/model_config.h"

namespace ferrum {

enum class LoraTarget { Q, K, V, Qkv, O, Gate, Up, GateUp, Down };
enum class LoraSite { Qkv, Out, GateUp, Down };  // the fused product a target adds to
constexpr int kLoraSites = 4;

const char* lora_target_name(LoraTarget t);  // GGUF base name: "attn_q", "ffn_gate_up", ...
LoraSite lora_site(LoraTarget t);

// One A/B pair of a file, converted to F32 or F16 and (for Q/K) in the base model's row order.
struct LoraPair {
  int layer = 0;
  LoraTarget target = LoraTarget::Q;
  std::string name;  // the tensor name in the file (for messages)
  TensorView a;      // ne = {in, r}
  TensorView b;      // ne = {r, out}
  float scale = 1;   // alpha / r (alpha / sqrt(r) with rsLoRA), times the user's scale
};

// A parsed adapter file: its pairs and the buffers they point into.
struct LoraFile {
  std::string source;
  std::vector<LoraPair> pairs;
  std::vector<std::shared_ptr<const void>> storage;
};

// Reads a PEFT directory or a GGUF LoRA file for a base with config `cfg`, validating every pair
// against it (layer, target, shapes, architecture); throws naming the file and tensor.
LoraFile read_lora_file(const std::string& path, const ModelConfig& cfg);

// Parsers for the two forms, before validation (lora_files.cpp). `permuted`: whether the Q/K
// B rows are already in GGUF llama order (interleaved RoPE pairs).
struct LoraFileRaw {
  LoraFile file;
  bool qk_permuted = false;
  std::string arch;  // the adapter's base architecture when the file names it
};
LoraFileRaw read_peft_dir(const std::string& dir);
LoraFileRaw read_gguf_lora(const std::string& path);

// load_lora() for a model config (what the public one uses: only the config matters).
std::shared_ptr<const LoraAdapter> load_lora_for(const ModelConfig& cfg, std::span<const LoraSpec> specs);

// One target's B matrix inside a site, stored transposed (bt: ne = {out, r}, i.e. r rows of out
// values, kernels/cpu/lowrank.h): adds scale * u[:, rank0 : rank0 + r] B^T into output columns
// [col0, col0 + out).
struct LoraSlot {
  int64_t col0 = 0;
  int64_t rank0 = 0;
  TensorView bt;
  float scale = 1;
};
struct LoraSiteWeights {
  TensorView a;  // the slots' A rows stacked: ne = {in, R}; no data = nothing at this site
  std::vector<LoraSlot> slots;
  std::vector<int64_t> slot_of_rank;  // for each of the R ranks, its slot (to scale u)
};
struct LoraLayer {
  std::array<LoraSiteWeights, kLoraSites> sites;
};

}  // namespace ferrum

// The public opaque type. Layers are indexed by the model's layer number.
class ferrum::LoraAdapter {
 public:
  struct Shape {  // the model it was loaded for
    int n_layer = 0, n_embd = 0, q_dim = 0, kv_dim = 0, n_ff = 0;
    bool operator==(const Shape&) const = default;
  };
  Shape shape;
  uint64_t id = 0;  // unique per adapter object (never reused): the KV prefix-cache namespace
  std::string name;
  std::vector<LoraLayer> layers;
  size_t bytes = 0;
  std::vector<std::shared_ptr<const void>> storage;

  static Shape shape_of(const ModelConfig& c) { return {c.n_layer, c.n_embd, c.q_dim(), c.kv_dim(), c.n_ff}; }
  // The bytes of the A and B matrices its layers point at (what `bytes` holds once it is made).
  size_t matrix_bytes() const {
    size_t n = 0;
    for (const LoraLayer& l : layers)
      for (const LoraSiteWeights& s : l.sites) {
        n += s.a.nbytes;
        for (const LoraSlot& slot : s.slots) n += slot.bt.nbytes;
      }
    return n;
  }
  const LoraSiteWeights& site(int layer, LoraSite s) const {
    return layers[layer].sites[static_cast<int>(s)];
  }
};
