// SentencePiece path: the bundled stories260K model (GGUF) and its llama2.c tokenizer.bin.
#include <gtest/gtest.h>

#include "ferrum/error.h"
#include "tokenizer_fixtures.h"

namespace ferrum {
namespace {

using test::data_path;

const std::vector<int32_t> kOnceUpon = {1, 403, 407, 261, 378, 432, 383, 286};

TEST(TokenizerSpm, Stories260KFromGguf) {
  auto f = gguf::File::open(std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf");
  auto tok = Tokenizer::from_gguf(*f);
  EXPECT_EQ(tok->kind(), "spm");
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
  // reference.json: llama.cpp's prompt ids.
  EXPECT_EQ(tok->encode("Once upon a time, there was", true, true), kOnceUpon);
  EXPECT_EQ(tok->encode("", true, true), std::vector<int32_t>({1}));
  EXPECT_EQ(tok->encode("", false, true), std::vector<int32_t>());
  EXPECT_EQ(tok->decode(kOnceUpon), "<s> Once upon a time, there was");  // as llama.cpp and HF
  EXPECT_EQ(tok->decode(kOnceUpon, true), "Once upon a time, there was");
  EXPECT_EQ(tok->token_to_piece(403), " Once");
  EXPECT_EQ(tok->token_to_piece(1, false), "");
  EXPECT_EQ(tok->token_type(1), TokenType::Control);
}

TEST(TokenizerSpm, Llama2cMatchesGguf) {
  auto bin = Tokenizer::from_llama2c(data_path("tokenizer/tok512.bin"));
  auto f = gguf::File::open(std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf");
  auto gg = Tokenizer::from_gguf(*f);
  ASSERT_EQ(bin->n_vocab(), 512);
  EXPECT_EQ(bin->encode("Once upon a time, there was", true, true), kOnceUpon);
  for (const char* s : {"Hello world", "  two  spaces", "emoji \xF0\x9F\x98\x80 and caf\xC3\xA9",
                        "Lily and Ben went to the park.\nThey saw a big dog!"}) {
    EXPECT_EQ(bin->encode(s, true, true), gg->encode(s, true, true)) << s;
    const auto ids = bin->encode(s, false, false);
    EXPECT_EQ(bin->decode(ids), s);
  }
  // Byte fallback: characters outside the 512-token vocabulary become <0xXX> (id = byte + 3).
  const auto ids = bin->encode("\xE4\xB8\xAD", false, false);  // U+4E2D
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[ids.size() - 3], 0xE4 + 3);
  EXPECT_EQ(ids[ids.size() - 1], 0xAD + 3);
}

TEST(TokenizerSpm, Llama2cErrors) {
  EXPECT_THROW(Tokenizer::from_llama2c(data_path("tokenizer/does-not-exist.bin")), Error);
  const std::string p = test::temp_dir() + "/bad.bin";
  {
    std::ofstream o(p, std::ios::binary);
    const int32_t max_len = 4;
    o.write(reinterpret_cast<const char*>(&max_len), 4);
    const float score = 0;
    const int32_t len = 99;  // longer than max_token_length
    o.write(reinterpret_cast<const char*>(&score), 4);
    o.write(reinterpret_cast<const char*>(&len), 4);
  }
  try {
    Tokenizer::from_llama2c(p);
    FAIL() << "expected ferrum::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("length 99"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferrum
