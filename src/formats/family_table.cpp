#include <cctype>

#include "core/ascii.h"
#include "core/fail.h"
#include "formats/family.h"

namespace ferrum {

// Each family's row, defined in formats/families/<family>.cpp.
extern const Family kLlama, kMistral, kQwen2, kQwen3, kQwen3Moe, kBert, kSmolLM3, kPhi3, kGemma2, kGemma3,
    kGptOss;

namespace {

// In this order names are looked up: "llama" is Llama (Mistral's GGUF name too), and the error
// messages list the families so.
const Family* const kFamilies[] = {&kLlama,   &kMistral, &kQwen2,  &kQwen3,  &kQwen3Moe, &kBert,
                                   &kSmolLM3, &kPhi3,    &kGemma2, &kGemma3, &kGptOss};

}  // namespace

std::span<const Family* const> families() {
  return kFamilies;
}

const Family& family_of(Arch a) {
  for (const Family* f : kFamilies)
    if (f->arch == a) return *f;
  fail("model family {} has no row in the family table", static_cast<int>(a));
}

const char* arch_name(Arch a) {
  for (const Family* f : kFamilies)
    if (f->arch == a) return f->name;
  return "?";
}

bool ModelConfig::is_moe() const {
  return family_of(arch).moe;
}

bool ModelConfig::is_encoder() const {
  return family_of(arch).encoder;
}

const char* gguf_arch(Arch a) {
  return family_of(a).gguf;
}

bool gguf_permutes_qk(Arch a) {
  return family_of(a).gguf_qk_permuted;
}

Arch parse_arch(const std::string& raw, const std::string& source) {
  const std::string n = ascii_lower(raw);
  for (const Family* f : kFamilies)  // in table order: "llama" is Llama, not Mistral's GGUF name
    if (n == f->name || n == f->gguf || n == f->hf_type) return f->arch;
  fail("{}: unknown architecture '{}' (supported: {})", source, raw, arch_names(&Family::name));
}

const Family* family_by_hf_type(const std::string& type) {
  for (const Family* f : kFamilies)
    if (type == f->hf_type) return f;
  return nullptr;
}

std::string arch_names(const char* Family::*column) {
  std::string out;
  for (const Family* f : kFamilies) out += (out.empty() ? "" : ", ") + std::string(f->*column);
  return out;
}

}  // namespace ferrum
