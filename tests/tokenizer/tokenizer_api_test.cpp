// Tokenizer API behaviour: special ids and EOG sets, BOS policy, chat templates, streaming
// detokenization, errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "ferrum/error.h"
#include "tokenizer_fixtures.h"

namespace ferrum {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerApi, Llama3GgufSpecials) {
  const Tokenizer& t = test::gguf_tokenizer("llama3-tokref");
  EXPECT_EQ(t.kind(), "bpe");
  EXPECT_EQ(t.n_vocab(), 128256);
  EXPECT_EQ(t.bos_id(), 128000);
  EXPECT_EQ(t.bos_text(), "<|begin_of_text|>");
  EXPECT_TRUE(t.add_bos());       // llama.cpp's llama-bpe default
  EXPECT_TRUE(t.is_eog(128009));  // <|eot_id|>
  EXPECT_TRUE(t.is_eog(128001));  // <|end_of_text|>
  EXPECT_FALSE(t.is_eog(128000));
  EXPECT_EQ(t.token_type(128009), TokenType::Control);
  // README trap 9: a rendered prompt with its own BOS gets a second one from add_special.
  EXPECT_EQ(t.encode("<|begin_of_text|>Hello<|eot_id|>", true, true),
            std::vector<int32_t>({128000, 128000, 9906, 128009}));
  // Trap 1: digits in groups of three, the space before digits is its own token.
  EXPECT_EQ(t.encode("1234567", false, false).size(), 3u);
  // Clean-up on decode (llama.cpp clean_spaces for llama-bpe).
  EXPECT_EQ(t.decode(t.encode("x ?? 0", false, false)), "x?? 0");
}

TEST(TokenizerApi, Llama3HfNoBosNoCleanupSwitch) {
  const Tokenizer& t = test::hf_tokenizer("llama3");
  EXPECT_FALSE(t.add_bos());  // this tokenizer.json's post-processor is ByteLevel only
  EXPECT_EQ(t.bos_text(), "<|begin_of_text|>");
  EXPECT_EQ(t.eos_text(), "<|end_of_text|>");
  EXPECT_NE(t.chat_template().find("start_header_id"), std::string::npos);
  const auto ids = t.encode("and 'single", false, true);
  EXPECT_EQ(t.decode(ids), "and'single");                 // clean_up_tokenization_spaces=true
  EXPECT_EQ(t.decode(ids, false, false), "and 'single");  // round trip with clean-up off
  // ignore_merges (trap 3): " Việt" is one vocab entry.
  EXPECT_EQ(t.encode(" Vi\xE1\xBB\x87t", false, true), std::vector<int32_t>({101798}));
}

TEST(TokenizerApi, QwenEogByText) {
  const Tokenizer& g = test::gguf_tokenizer("qwen3-tokref");
  // llama.cpp retypes Qwen's ordinary "</s>" (128247) to CONTROL + EOG and matches it in text.
  EXPECT_TRUE(g.is_eog(128247));
  EXPECT_EQ(g.token_type(128247), TokenType::Control);
  EXPECT_EQ(g.encode("</s>", false, true), std::vector<int32_t>({128247}));
  EXPECT_TRUE(g.is_eog(151645));  // <|im_end|>
  EXPECT_TRUE(g.is_eog(151643));  // <|endoftext|>
  EXPECT_EQ(g.bos_id(), -1);      // no bos key (llama.cpp would default to 11 = ",")
  EXPECT_FALSE(g.is_eog(11));
  EXPECT_EQ(g.eos_id(), 151645);
  const Tokenizer& h = test::hf_tokenizer("qwen3");
  EXPECT_EQ(h.encode("</s>", false, true), std::vector<int32_t>({522, 82, 29}));  // HF: text
  EXPECT_TRUE(h.is_eog(151645));
  EXPECT_EQ(h.eos_id(), 151645);
  EXPECT_EQ(h.bos_id(), -1);
  EXPECT_EQ(h.bos_text(), "");
  // User text containing special-token text: parse_special decides.
  EXPECT_EQ(h.encode("a<|im_end|>", false, true).back(), 151645);
  EXPECT_NE(h.encode("a<|im_end|>", false, false).back(), 151645);
  // NFC normalizer (trap 4): NFD input encodes like NFC input.
  EXPECT_EQ(h.encode("e\xCC\x81", false, true), h.encode("\xC3\xA9", false, true));
  EXPECT_NE(g.encode("e\xCC\x81", false, true), g.encode("\xC3\xA9", false, true));
}

TEST(TokenizerApi, BertSpecials) {
  const Tokenizer& g = test::gguf_tokenizer("bert-bge");
  EXPECT_EQ(g.kind(), "wordpiece");
  EXPECT_EQ(g.encode("", true, true), std::vector<int32_t>({101, 102}));
  const Tokenizer& h = test::hf_tokenizer("bert-bge-rebuilt-from-gguf");
  EXPECT_EQ(h.kind(), "wordpiece");
  EXPECT_EQ(h.encode("", true, true), std::vector<int32_t>({101, 102}));
  EXPECT_EQ(h.encode("[CLS]", false, true), std::vector<int32_t>({101}));
  EXPECT_NE(h.encode("[cls]", false, true), std::vector<int32_t>({101}));
  // A word longer than 100 characters is one [UNK] in HF.
  EXPECT_EQ(h.encode(std::string(101, 'a'), false, true), std::vector<int32_t>({100}));
  EXPECT_EQ(h.decode(h.encode("Hello, World!", true, true), true), "hello, world!");
}

TEST(TokenizerApi, SpmSpecialsAndPhi3Rstrip) {
  const Tokenizer& t = test::gguf_tokenizer("llama-spm");
  EXPECT_EQ(t.encode(" ", false, true), std::vector<int32_t>({259}));
  EXPECT_EQ(t.encode("<s>hello", false, true), t.encode("<s>hello", false, true));
  const auto ids = t.encode("<s>hello", false, true);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(t.token_text(ids[1]), "\xE2\x96\x81hello");
  const Tokenizer& p = test::gguf_tokenizer("phi-3");
  const auto a = p.encode("<|user|>\nhi", false, true);
  const auto b = p.encode("<|user|>hi", false, true);
  EXPECT_EQ(a, b);  // RSTRIP eats the newline
}

TEST(TokenizerApi, StreamDecoderHoldsPartialUtf8) {
  const Tokenizer& t = test::gguf_tokenizer("llama-spm");
  // 😀 -> ▁ + four byte tokens (README trap 5)
  const auto ids = t.encode("\xF0\x9F\x98\x80 ok", false, false);
  ASSERT_GE(ids.size(), 5u);
  StreamDecoder sd(t);
  std::vector<std::string> parts;
  for (int32_t id : ids) parts.push_back(sd.push(id));
  parts.push_back(sd.flush());
  EXPECT_EQ(parts[0], "");  // leading space dropped
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(parts[2], "");
  EXPECT_EQ(parts[3], "");
  EXPECT_EQ(parts[4], "\xF0\x9F\x98\x80");
  std::string all;
  for (auto& p : parts) all += p;
  EXPECT_EQ(all, t.decode(ids));
  EXPECT_EQ(all, "\xF0\x9F\x98\x80 ok");
}

TEST(TokenizerApi, StreamDecoderContinuation) {
  const Tokenizer& t = test::gguf_tokenizer("llama-spm");
  const auto ids = t.encode("there was", false, false);  // "▁there", "▁was"
  StreamDecoder fresh(t, true);
  StreamDecoder cont(t, true, /*at_text_start=*/false);
  std::string a, b;
  for (int32_t id : ids) a += fresh.push(id), b += cont.push(id);
  a += fresh.flush();
  b += cont.flush();
  EXPECT_EQ(a, "there was");
  EXPECT_EQ(b, " there was");
  // skip_special drops BOS; the first text piece after it loses its space.
  StreamDecoder sd(t, true);
  std::string c = sd.push(t.bos_id());
  for (int32_t id : ids) c += sd.push(id);
  EXPECT_EQ(c + sd.flush(), "there was");
}

TEST(TokenizerApi, StreamDecoderCleanup) {
  const Tokenizer& t = test::hf_tokenizer("gpt2-rebuilt-from-gguf");
  for (const char* s : {"Hello , world ! It 's fine .", "a ' b", "do n't", "x ?? 0", "end ."}) {
    const auto ids = t.encode(s, false, true);
    StreamDecoder sd(t);
    std::string out;
    for (int32_t id : ids) out += sd.push(id);
    out += sd.flush();
    EXPECT_EQ(out, t.decode(ids)) << s;
  }
  EXPECT_EQ(t.decode(t.encode("Hello , world !", false, true)), "Hello, world!");
}

TEST(TokenizerApi, InvalidUtf8Throws) {
  const Tokenizer& t = test::gguf_tokenizer("gpt-2");
  const std::string msg = error_of([&] { t.encode("ok\xC3(", false, false); });
  EXPECT_NE(msg.find("not valid UTF-8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset 2"), std::string::npos) << msg;
  EXPECT_THROW(t.encode("\xED\xA0\x80", false, false), Error);  // surrogate
  EXPECT_THROW(t.encode("\xC0\xAF", false, false), Error);      // overlong
  EXPECT_THROW(t.decode(std::vector<int32_t>{50257}), Error);
  EXPECT_THROW(t.token_text(-1), Error);
  // NUL is a valid character (trap 12).
  EXPECT_FALSE(t.encode(std::string("a\0b", 3), false, false).empty());
}

TEST(TokenizerApi, HfDirErrors) {
  const std::string dir = test::temp_dir();
  EXPECT_NE(error_of([&] { Tokenizer::from_hf_dir(dir); }).find("tokenizer.json not found"),
            std::string::npos);
  {
    std::ofstream o(dir + "/tokenizer.json");
    o << R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})";
  }
  const std::string msg = error_of([&] { Tokenizer::from_hf_dir(dir); });
  EXPECT_NE(msg.find("model type 'Unigram' is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << msg;
  {
    std::ofstream o(dir + "/tokenizer.json");
    o << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]}})";
  }
  EXPECT_NE(error_of([&] { Tokenizer::from_hf_dir(dir); }).find("merges[0]"), std::string::npos);
  {
    std::ofstream o(dir + "/tokenizer.json");
    o << "{not json";
  }
  EXPECT_NE(error_of([&] { Tokenizer::from_hf_dir(dir); }).find("invalid JSON"), std::string::npos);
}

TEST(TokenizerApi, HfDirGenerationConfigAndTemplateFile) {
  const std::string dir = test::temp_dir();
  fs::copy_file(test::hf_dir("gpt2-rebuilt-from-gguf") + "/tokenizer.json", dir + "/tokenizer.json");
  {
    std::ofstream o(dir + "/generation_config.json");
    o << R"({"eos_token_id": [50256, 13]})";
    std::ofstream j(dir + "/chat_template.jinja");
    j << "{{ messages }}";
  }
  auto t = Tokenizer::from_hf_dir(dir);
  EXPECT_EQ(t->eos_id(), 50256);
  EXPECT_TRUE(t->is_eog(13));
  EXPECT_TRUE(t->is_eog(50256));
  EXPECT_EQ(t->chat_template(), "{{ messages }}");
}

}  // namespace
}  // namespace ferrum
