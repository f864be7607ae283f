// llama.cpp's upstream tokenizer test vectors (gguf/*.inp/.out, made by HF Python tokenizers with
// add_special_tokens=False), run through both loaders: the GGUF vocabularies (llama.cpp's
// test-tokenizer-0 calls: add_special=false, parse_special=false) and the tokenizer.json files.
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer_fixtures.h"

namespace ferrum {
namespace {

struct Vectors {
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> outputs;
};

Vectors load_vectors(const std::string& name) {
  Vectors v;
  const std::string inp = test::read_text(test::data_path("tokenizer/gguf/ggml-vocab-" + name + ".gguf.inp"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  for (size_t hit; (hit = inp.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) {
    v.inputs.push_back(inp.substr(pos, hit - pos));
  }
  std::istringstream out(test::read_text(test::data_path("tokenizer/gguf/ggml-vocab-" + name + ".gguf.out")));
  std::string line;
  while (std::getline(out, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int32_t id; ls >> id;) ids.push_back(id);
    v.outputs.push_back(ids);
  }
  return v;
}

void check_vectors(const Tokenizer& tok, const std::string& vectors, bool parse_special) {
  const Vectors v = load_vectors(vectors);
  ASSERT_EQ(v.inputs.size(), 46u) << vectors;  // 46 strings + llama.cpp's trailing empty one
  ASSERT_GE(v.outputs.size(), v.inputs.size()) << vectors;
  int bad = 0;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    const auto ids = tok.encode(v.inputs[i], false, parse_special);
    if (ids != v.outputs[i]) {
      ++bad;
      ADD_FAILURE() << vectors << " #" << i << " '" << v.inputs[i] << "': got "
                    << ::testing::PrintToString(ids) << " want " << ::testing::PrintToString(v.outputs[i]);
    }
  }
  EXPECT_EQ(bad, 0) << vectors;
}

TEST(TokenizerVectors, GgufLlamaSpm) {
  check_vectors(test::gguf_tokenizer("llama-spm"), "llama-spm", false);
}
TEST(TokenizerVectors, GgufPhi3) {
  check_vectors(test::gguf_tokenizer("phi-3"), "phi-3", false);
}
TEST(TokenizerVectors, GgufGpt2) {
  check_vectors(test::gguf_tokenizer("gpt-2"), "gpt-2", false);
}
TEST(TokenizerVectors, GgufBertBge) {
  check_vectors(test::gguf_tokenizer("bert-bge"), "bert-bge", false);
}
TEST(TokenizerVectors, GgufLlama3Tokref) {
  check_vectors(test::gguf_tokenizer("llama3-tokref"), "llama-bpe", false);
}
TEST(TokenizerVectors, GgufQwen3Tokref) {
  check_vectors(test::gguf_tokenizer("qwen3-tokref"), "qwen2", false);
}

TEST(TokenizerVectors, HfLlama2) {
  check_vectors(test::hf_tokenizer("llama2-rebuilt-from-gguf"), "llama-spm", true);
}
TEST(TokenizerVectors, HfGpt2) {
  check_vectors(test::hf_tokenizer("gpt2-rebuilt-from-gguf"), "gpt-2", true);
}
TEST(TokenizerVectors, HfBertBge) {
  check_vectors(test::hf_tokenizer("bert-bge-rebuilt-from-gguf"), "bert-bge", true);
}
TEST(TokenizerVectors, HfLlama3) {
  check_vectors(test::hf_tokenizer("llama3"), "llama-bpe", true);
}
TEST(TokenizerVectors, HfQwen3) {
  check_vectors(test::hf_tokenizer("qwen3"), "qwen2", true);
}

}  // namespace
}  // namespace ferrum
