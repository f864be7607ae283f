// The model families ferrum knows: one row each in the table (formats/family_table.cpp), each
// described in a file of its own (formats/families/<family>.cpp): every name the family has in the
// files ferrum reads and writes, transformers' defaults for it, and how its own config fields are
// read from a config.json and from GGUF metadata and written back. The GGUF reader and writer, the
// Hugging Face config reader, the model registry, `ferrum info` and the error messages listing the
// supported families all read this table. A new family is its Arch value, one row in the table and
// one file (and a model class of its own only when the shared decoder cannot run it).
#pragma once

#include <span>
#include <string>

#include "ferrum/model_config.h"

namespace ferrum {
namespace hf {
class Config;
}
namespace gguf {
class Writer;
}
struct GgufKeys;  // formats/family_fields.h

struct Family {
  Arch arch;
  const char* name;       // what ferrum prints (arch_name, `ferrum info`)
  const char* gguf;       // GGUF general.architecture ferrum writes, and its "<gguf>." key prefix
  const char* hf_type;    // Hugging Face config.json model_type
  const char* hf_class;   // prefix of the Hugging Face architectures[0] class names
  int hf_n_ctx;           // transformers' default max_position_embeddings
  bool gguf_qk_permuted;  // GGUF stores Q/K rows in interleaved-pair RoPE order (llama.cpp's convert permutes
                          // them)
  // transformers' defaults for the shared fields
  double hf_rope_theta = 10000.0;
  double hf_norm_eps = 1e-6;  // rms_norm_eps (an encoder's layer_norm_eps)
  bool hf_tied_embeddings = false;
  bool moe = false;      // every layer's FFN is a mixture of experts (the expert sizes are in the config)
  bool encoder = false;  // bidirectional, LayerNorm, hidden states only (BERT)
  // Tensors: the GGUF name of a layer's norm before the FFN (gpt-oss files, as llama.cpp names them:
  // post_attention_norm), whether HF norm weights hold w of a (1 + w) scale (Gemma; GGUF holds the
  // scale), whether the experts are stored fused per layer (gpt-oss's gate_up/down, MXFP4 or BF16:
  // formats/hf_gpt_oss.h) rather than one matrix per expert, and whether attention sinks are required.
  const char* gguf_ffn_norm = "ffn_norm.weight";
  bool hf_norm_plus_one = false;
  bool hf_fused_experts = false;
  bool attn_sinks = false;

  // The family's own fields, read after the shared ones (sizes, RoPE base and scaling, norm epsilon,
  // tied embeddings, biases and experts the file has, a window use_sliding_window switches on).
  void (*read_hf)(const hf::Config& c, ModelConfig& m) = nullptr;
  void (*read_gguf)(const GgufKeys& g, ModelConfig& m) = nullptr;
  // The family's own "<prefix>." keys, after the shared ones (an encoder's: all of them). Throws
  // naming the model when `m` holds what a GGUF file of this family cannot say.
  void (*write_gguf)(gguf::Writer& w, const ModelConfig& m, const std::string& prefix) = nullptr;
};

std::span<const Family* const> families();
const Family& family_of(Arch a);

// GGUF general.architecture for `a`: mistral is written as "llama" (as llama.cpp converts it,
// the same network with a sliding window), qwen3_moe as "qwen3moe".
const char* gguf_arch(Arch a);

// Whether GGUF files of family `a` hold Q/K rows permuted for interleaved-pair RoPE (llama, mistral,
// smollm3); the HF order (rotate-half) is kept by the others.
bool gguf_permutes_qk(Arch a);

// The family of a GGUF (or GGUF LoRA) general.architecture, case-insensitive: a row's name, GGUF
// name or HF model_type. Throws "<source>: unknown architecture '<name>' (supported: ...)".
Arch parse_arch(const std::string& name, const std::string& source);

// The row whose HF model_type is `type`, else nullptr.
const Family* family_by_hf_type(const std::string& type);

// "a, b, c": one column of the table, for error messages.
std::string arch_names(const char* Family::*column);

}  // namespace ferrum
