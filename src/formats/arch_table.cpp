#include "formats/arch_table.h"

#include <cctype>

#include "core/fail.h"

namespace ferrum {
namespace {

// Mistral differs from Llama only in its HF names and defaults; ferrum prints it as "mistral"
// when it came from a Hugging Face directory, and writes it to GGUF as llama.
constexpr ArchInfo kArchs[] = {
    {Arch::Llama, "llama", "llama", "llama", "Llama", 2048, true},
    {Arch::Mistral, "mistral", "llama", "mistral", "Mistral", 4096 * 32, true},
    {Arch::Qwen2, "qwen2", "qwen2", "qwen2", "Qwen2For", 32768, false},  // "For": not Qwen2Moe/Qwen2VL
    {Arch::Qwen3, "qwen3", "qwen3", "qwen3", "Qwen3For", 32768, false},
    {Arch::Qwen3Moe, "qwen3moe", "qwen3moe", "qwen3_moe", "Qwen3MoeFor", 32768, false},
    {Arch::Bert, "bert", "bert", "bert", "Bert", 512, false},
    {Arch::SmolLM3, "smollm3", "smollm3", "smollm3", "SmolLM3", 32768, true},
    {Arch::Phi3, "phi3", "phi3", "phi3", "Phi3For", 4096, false},
    {Arch::Gemma2, "gemma2", "gemma2", "gemma2", "Gemma2For", 8192, false},
    {Arch::Gemma3, "gemma3", "gemma3", "gemma3_text", "Gemma3For", 131072, false},
    {Arch::GptOss, "gpt-oss", "gpt-oss", "gpt_oss", "GptOssFor", 131072, false},
};

std::string lower(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::span<const ArchInfo> arch_table() {
  return kArchs;
}

const char* arch_name(Arch a) {
  for (const ArchInfo& r : kArchs)
    if (r.arch == a) return r.name;
  return "?";
}

const char* gguf_arch(Arch a) {
  for (const ArchInfo& r : kArchs)
    if (r.arch == a) return r.gguf;
  return "?";
}

bool gguf_permutes_qk(Arch a) {
  for (const ArchInfo& r : kArchs)
    if (r.arch == a) return r.gguf_qk_permuted;
  return false;
}

Arch parse_arch(const std::string& raw, const std::string& source) {
  const std::string n = lower(raw);
  for (const ArchInfo& r : kArchs)  // in table order: "llama" is Llama, not Mistral's GGUF name
    if (n == r.name || n == r.gguf || n == r.hf_type) return r.arch;
  fail("{}: unknown architecture '{}' (supported: {})", source, raw, arch_names(&ArchInfo::name));
}

const ArchInfo* arch_by_hf_type(const std::string& type) {
  for (const ArchInfo& r : kArchs)
    if (type == r.hf_type) return &r;
  return nullptr;
}

std::string arch_names(const char* ArchInfo::*column) {
  std::string out;
  for (const ArchInfo& r : kArchs) out += (out.empty() ? "" : ", ") + std::string(r.*column);
  return out;
}

}  // namespace ferrum
