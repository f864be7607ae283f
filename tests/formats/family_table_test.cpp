// The family table: every name of a family reads back to it, Mistral is printed as
// itself but written to GGUF as llama, and an unknown name lists the supported ones.
#include <gtest/gtest.h>

#include "formats/family.h"
#include "formats/hf_config.h"
#include "test_util.h"

namespace ferrum {
namespace {

TEST(FamilyTable, EveryArchHasOneRow) {
  for (Arch a : {Arch::Llama, Arch::Mistral, Arch::Qwen2, Arch::Qwen3, Arch::Qwen3Moe, Arch::Bert,
                 Arch::SmolLM3, Arch::Phi3, Arch::Gemma2, Arch::Gemma3, Arch::GptOss}) {
    int rows = 0;
    for (const Family* r : families()) rows += r->arch == a;
    EXPECT_EQ(rows, 1) << arch_name(a);
  }
}

TEST(FamilyTable, EveryNameReadsBackToItsFamily) {
  for (const Family* row : families()) {
    const Family& r = *row;
    EXPECT_STREQ(arch_name(r.arch), r.name);
    EXPECT_EQ(parse_arch(r.name, "f.gguf"), r.arch) << r.name;
    EXPECT_EQ(parse_arch(r.hf_type, "f.gguf"), r.arch) << r.hf_type;
    // What ferrum writes reads back as a family written under the same name.
    EXPECT_STREQ(gguf_arch(parse_arch(gguf_arch(r.arch), "f.gguf")), r.gguf) << r.name;
    EXPECT_EQ(family_by_hf_type(r.hf_type), &r);
    EXPECT_EQ(&family_of(r.arch), &r);
    // A config.json naming only its class (architectures[0]) is read as the family.
    EXPECT_EQ(hf::Config::from_json({{"architectures", {r.hf_class}}}).architecture(), r.hf_type);
  }
}

TEST(FamilyTable, MistralIsWrittenAsLlama) {
  EXPECT_STREQ(arch_name(Arch::Mistral), "mistral");
  EXPECT_STREQ(gguf_arch(Arch::Mistral), "llama");  // as llama.cpp's converter writes it
  EXPECT_EQ(parse_arch("llama", "f.gguf"), Arch::Llama);
  EXPECT_EQ(parse_arch("mistral", "f.gguf"), Arch::Mistral);
  EXPECT_EQ(parse_arch("Qwen3_MoE", "f.gguf"), Arch::Qwen3Moe);
  EXPECT_STREQ(gguf_arch(Arch::Qwen3Moe), "qwen3moe");
}

TEST(FamilyTable, UnknownNameListsTheSupportedOnes) {
  EXPECT_EQ(test::error_of([] { parse_arch("llama4", "f.gguf"); }),
            "f.gguf: unknown architecture 'llama4' (supported: llama, mistral, qwen2, qwen3, qwen3moe, bert, "
            "smollm3, phi3, gemma2, gemma3, gpt-oss)");
  EXPECT_EQ(arch_names(&Family::hf_type),
            "llama, mistral, qwen2, qwen3, qwen3_moe, bert, smollm3, phi3, gemma2, gemma3_text, gpt_oss");
  EXPECT_EQ(family_by_hf_type("gemma"), nullptr);
}

}  // namespace
}  // namespace ferrum
