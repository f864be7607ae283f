// Malformed tokenizer.json / tokenizer_config.json / generation_config.json: ids out of range,
// fields of the wrong JSON type. Each must be a ferrum::Error naming the file and the field,
// never a crash or an allocation sized by a bogus id.
#include <gtest/gtest.h>

#include <fstream>

#include "ferrum/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "tokenizer_fixtures.h"

namespace ferrum {
namespace {

std::string load_error(const std::string& tokenizer_json, const std::string& config = "",
                       const std::string& generation_config = "") {
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/tokenizer.json") << tokenizer_json;
  if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
  if (!generation_config.empty()) std::ofstream(dir + "/generation_config.json") << generation_config;
  try {
    Tokenizer::from_hf_dir(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string bpe(const std::string& vocab, const std::string& extra = "") {
  return R"({"model": {"type": "BPE", "vocab": )" + vocab + R"(, "merges": []})" + extra + "}";
}

TEST(TokenizerBadInput, ValidVocabularyLoads) {
  EXPECT_EQ(load_error(bpe(R"({"a": 0, "b": 1})")), "(no error)");
  // Gaps are allowed (unassigned ids), within reason.
  EXPECT_EQ(load_error(bpe(R"({"a": 0, "b": 100})")), "(no error)");
}

TEST(TokenizerBadInput, NegativeVocabularyIdIsAnError) {
  // Was SIGSEGV: id -1 became index SIZE_MAX.
  const std::string msg = load_error(bpe(R"({"a": 0, "b": -1})"));
  EXPECT_NE(msg.find("tokenizer.json: model.vocab['b'] has id -1"), std::string::npos) << msg;
}

TEST(TokenizerBadInput, HugeVocabularyIdIsAnErrorNotAnAllocation) {
  // Was a 23 GB allocation for one id of 1e8.
  std::string msg = load_error(bpe(R"({"a": 0, "b": 100000000})"));
  EXPECT_NE(msg.find("model.vocab['b'] has id 100000000"), std::string::npos) << msg;
  msg = load_error(bpe(R"({"a": 0})", R"(, "added_tokens": [{"id": 4000000000, "content": "<x>"}])"));
  EXPECT_NE(msg.find("added_tokens[0] has id 4000000000"), std::string::npos) << msg;
}

TEST(TokenizerBadInput, NonIntegerIdsAreErrors) {
  std::string msg = load_error(bpe(R"({"a": "0"})"));
  EXPECT_NE(msg.find("model.vocab['a'] has id \"0\""), std::string::npos) << msg;
  msg = load_error(bpe(R"({"a": 0.5})"));
  EXPECT_NE(msg.find("model.vocab['a'] has id 0.5"), std::string::npos) << msg;
  msg = load_error(bpe(R"({"a": 0})", R"(, "added_tokens": [{"id": -1, "content": "<x>"}])"));
  EXPECT_NE(msg.find("added_tokens[0] has id -1"), std::string::npos) << msg;
  msg = load_error(bpe(R"({"a": 0})", R"(, "added_tokens": [{"id": 1}])"));
  EXPECT_NE(msg.find("added_tokens[0] needs an integer 'id' and a string 'content'"), std::string::npos)
      << msg;
  msg = load_error(bpe(R"({"a": 0})", R"(, "added_tokens": 5)"));
  EXPECT_NE(msg.find("added_tokens is not a list"), std::string::npos) << msg;
}

TEST(TokenizerBadInput, FieldsOfTheWrongTypeNameTheSection) {
  // These were nlohmann::json exceptions that named neither the file nor the field.
  std::string msg = load_error(
      bpe(R"({"a": 0})", R"(, "normalizer": {"type": "Replace", "pattern": {"String": 1}, "content": "x"})"));
  EXPECT_NE(msg.find("tokenizer.json: normalizer:"), std::string::npos) << msg;
  msg = load_error(bpe(R"({"a": 0})", R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": 3}})"));
  EXPECT_NE(msg.find("tokenizer.json: pre_tokenizer:"), std::string::npos) << msg;
  msg = load_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [[1, 2]]}})");
  EXPECT_NE(msg.find("tokenizer.json: model.merges:"), std::string::npos) << msg;
  msg = load_error(bpe(R"({"a": 0})"), R"({"chat_template": [{"name": 1}]})");
  EXPECT_NE(msg.find("chat_template (tokenizer_config.json)"), std::string::npos) << msg;
}

TEST(TokenizerBadInput, GenerationConfigEosIdsAreRangeChecked) {
  // 2^32 + 1 used to be truncated to id 1.
  const std::string msg = load_error(bpe(R"({"a": 0, "b": 1})"), "", R"({"eos_token_id": 4294967297})");
  EXPECT_NE(msg.find("eos_token_id 4294967297 out of range"), std::string::npos) << msg;
}

TEST(TokenizerBadInput, ByteFallbackWithAMissingByteTokenIsUnknown) {
  // Found by fuzz_tokenizer: only the first byte's <0xXX> token was checked, so "é" (C3 A9)
  // with <0xA9> missing from the vocabulary encoded to {<0xC3>, -1} and decoding threw.
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/tokenizer.json")
      << R"({"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
      "vocab": {"<unk>": 0, "a": 1, "<0xC3>": 2}, "merges": []}})";
  auto t = Tokenizer::from_hf_dir(dir);
  const auto ids = t->encode("a\xC3\xA9", false, false);
  EXPECT_EQ(ids, std::vector<int32_t>({1, 0}));
  EXPECT_EQ(t->decode(ids), "a<unk>");
}

TEST(TokenizerBadInput, WordPieceNeedsItsUnknownToken) {
  // Found by fuzz_tokenizer: without unk_token an unknown word was encoded as id -1.
  std::string msg = load_error(R"({"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "a": 1}}})");
  EXPECT_NE(msg.find("tokenizer.json: unk_token '[UNK]' is not in the vocabulary"), std::string::npos) << msg;
  // HF's default name is used when the field is missing.
  EXPECT_EQ(load_error(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}}})"), "(no error)");

  // The same from GGUF: the default unknown id 100 is beyond this vocabulary.
  gguf::Writer w;
  w.set_string("tokenizer.ggml.model", "bert");
  w.set_string_array("tokenizer.ggml.tokens", {"[PAD]", "a", "b"});
  const std::string path = test::temp_dir() + "/wp.gguf";
  w.write(path);
  try {
    Tokenizer::from_gguf(*gguf::File::open(path));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("wp.gguf: tokenizer.ggml.unknown_token_id is missing or out of range"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ferrum
