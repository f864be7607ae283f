// The model families ferrum knows, one row each: every name a family has in the files ferrum
// reads and writes. A new family is one more row here (plus its ModelConfig reading and its
// model class); the GGUF reader and writer, the Hugging Face config reader, `ferrum info` and
// the error messages listing the supported families all read this table.
#pragma once

#include <span>
#include <string>

#include "ferrum/model_config.h"

namespace ferrum {

struct ArchInfo {
  Arch arch;
  const char* name;      // what ferrum prints (arch_name, `ferrum info`)
  const char* gguf;      // GGUF general.architecture ferrum writes, and its "<gguf>." key prefix
  const char* hf_type;   // Hugging Face config.json model_type
  const char* hf_class;  // prefix of the Hugging Face architectures[0] class names
  int hf_n_ctx;          // transformers' default max_position_embeddings
  bool gguf_qk_permuted;  // GGUF stores Q/K rows in interleaved-pair RoPE order (llama.cpp's convert permutes
                          // them)
};

std::span<const ArchInfo> arch_table();

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
const ArchInfo* arch_by_hf_type(const std::string& type);

// "a, b, c": one column of the table, for error messages.
std::string arch_names(const char* ArchInfo::*column);

}  // namespace ferrum
