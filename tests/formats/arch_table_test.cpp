// The architecture table: every name of a family reads back to it, Mistral is printed as
// itself but written to GGUF as llama, and an unknown name lists the supported ones.
#include "formats/arch_table.h"

#include <gtest/gtest.h>

#include "formats/hf_config.h"
#include "test_util.h"

namespace ferrum {
namespace {

TEST(ArchTable, EveryArchHasOneRow) {
  for (Arch a : {Arch::Llama, Arch::Mistral, Arch::Qwen2, Arch::Qwen3, Arch::Qwen3Moe, Arch::Bert}) {
    int rows = 0;
    for (const ArchInfo& r : arch_table()) rows += r.arch == a;
    EXPECT_EQ(rows, 1) << arch_name(a);
  }
}

TEST(ArchTable, EveryNameReadsBackToItsFamily) {
  for (const ArchInfo& r : arch_table()) {
    EXPECT_STREQ(arch_name(r.arch), r.name);
    EXPECT_EQ(parse_arch(r.name, "f.gguf"), r.arch) << r.name;
    EXPECT_EQ(parse_arch(r.hf_type, "f.gguf"), r.arch) << r.hf_type;
    // What ferrum writes reads back as a family written under the same name.
    EXPECT_STREQ(gguf_arch(parse_arch(gguf_arch(r.arch), "f.gguf")), r.gguf) << r.name;
    EXPECT_EQ(arch_by_hf_type(r.hf_type), &r);
    // A config.json naming only its class (architectures[0]) is read as the family.
    EXPECT_EQ(hf::Config::from_json({{"architectures", {r.hf_class}}}).architecture(), r.hf_type);
  }
}

TEST(ArchTable, MistralIsWrittenAsLlama) {
  EXPECT_STREQ(arch_name(Arch::Mistral), "mistral");
  EXPECT_STREQ(gguf_arch(Arch::Mistral), "llama");  // as llama.cpp's converter writes it
  EXPECT_EQ(parse_arch("llama", "f.gguf"), Arch::Llama);
  EXPECT_EQ(parse_arch("mistral", "f.gguf"), Arch::Mistral);
  EXPECT_EQ(parse_arch("Qwen3_MoE", "f.gguf"), Arch::Qwen3Moe);
  EXPECT_STREQ(gguf_arch(Arch::Qwen3Moe), "qwen3moe");
}

TEST(ArchTable, UnknownNameListsTheSupportedOnes) {
  EXPECT_EQ(test::error_of([] { parse_arch("llama4", "f.gguf"); }),
            "f.gguf: unknown architecture 'llama4' (supported: llama, mistral, qwen2, qwen3, qwen3moe, bert, "
            "smollm3, phi3, gemma2, gemma3, gpt-oss)");
  EXPECT_EQ(arch_names(&ArchInfo::hf_type),
            "llama, mistral, qwen2, qwen3, qwen3_moe, bert, smollm3, phi3, gemma2, gemma3_text, gpt_oss");
  EXPECT_EQ(arch_by_hf_type("gemma"), nullptr);
}

}  // namespace
}  // namespace ferrum
