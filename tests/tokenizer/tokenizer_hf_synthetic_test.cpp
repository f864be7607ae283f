// tokenizer.json features the bundled vocabularies do not use: Metaspace pre-tokenizer/decoder,
// added tokens with lstrip/rstrip, Split behaviours, Digits, byte fallback, fuse_unk.
#include <gtest/gtest.h>

#include "ferrum/error.h"
#include "tokenizer_fixtures.h"

namespace ferrum {
namespace {

std::unique_ptr<Tokenizer> load_json(const std::string& tokenizer_json, const std::string& config = "") {
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/tokenizer.json") << tokenizer_json;
  if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
  return Tokenizer::from_hf_dir(dir);
}

TEST(TokenizerHfSynthetic, MetaspaceAndStrippedAddedTokens) {
  auto t = load_json(R"({
    "added_tokens": [{"id": 7, "content": "<x>", "special": true, "lstrip": true, "rstrip": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
    "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "<x>", "type_id": 0}}], "special_tokens": {}},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": false,
              "vocab": {"▁": 0, "a": 1, "b": 2, "▁a": 3, "ab": 4, "▁ab": 5, "<unk>": 6, "<x>": 7},
              "merges": ["▁ a", "a b", "▁a b"]}})");
  EXPECT_EQ(t->kind(), "bpe");
  EXPECT_EQ(t->encode("ab ab", false, true), std::vector<int32_t>({5, 5}));
  EXPECT_EQ(t->decode(std::vector<int32_t>{5, 5}), "ab ab");
  // lstrip/rstrip eat the spaces around <x>; "b" after it is not the first split: no ▁.
  EXPECT_EQ(t->encode("a <x> b", false, true), std::vector<int32_t>({3, 7, 2}));
  // parse_special=false: <x> is text; unknown characters fuse into one <unk>.
  EXPECT_EQ(t->encode("a<x>", false, false), std::vector<int32_t>({3, 6}));
  EXPECT_EQ(t->encode("a", true, true), std::vector<int32_t>({3, 7}));  // template suffix
  EXPECT_EQ(t->decode(std::vector<int32_t>{3, 7, 2}, true), "ab");
}

TEST(TokenizerHfSynthetic, SplitBehaviorsDigitsByteFallback) {
  auto t = load_json(R"({
    "added_tokens": [],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Lowercase"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "-"}, "behavior": "Removed", "invert": false},
        {"type": "Digits", "individual_digits": true}]},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "unk_token": null, "byte_fallback": true,
              "vocab": {"a": 0, "b": 1, "ab": 2, "1": 3, "2": 4, "12": 5, "<0xC3>": 6, "<0xA9>": 7},
              "merges": [["a", "b"], ["1", "2"]]}})");
  // "-" removed, digits isolated (so "12" never merges), upper case lowered, é byte-fallback.
  EXPECT_EQ(t->encode("AB-12\xC3\xA9", false, true), std::vector<int32_t>({2, 3, 4, 6, 7}));
  EXPECT_EQ(t->decode(std::vector<int32_t>{2, 3, 4, 6, 7}), "ab12\xC3\xA9");
  EXPECT_EQ(t->token_type(6), TokenType::Byte);
}

TEST(TokenizerHfSynthetic, UnsupportedPiecesAreErrors) {
  const std::string base = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
  auto msg = [&](const std::string& extra) {
    try {
      load_json("{" + extra + base + "}");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg(R"("normalizer": {"type": "NFKC"},)").find("normalizer type 'NFKC'"), std::string::npos);
  EXPECT_NE(msg(R"("pre_tokenizer": {"type": "CharDelimiterSplit"},)").find("CharDelimiterSplit"),
            std::string::npos);
  EXPECT_NE(msg(R"("decoder": {"type": "CTC"},)").find("decoder type 'CTC'"), std::string::npos);
  EXPECT_NE(
      msg(R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"},)")
          .find("(unclosed"),
      std::string::npos);
}

}  // namespace
}  // namespace ferrum

namespace ferrum {
namespace {

// A slow-tokenizer BERT directory (vocab.txt, no tokenizer.json): the fixture BERT model's
// sentences must tokenize as llama.cpp did on its GGUF.
TEST(TokenizerHfVocabTxt, BertFixtureSentences) {
  const std::string dir = test::data_path("tokenizer/hf/bert-fixture-vocab-txt");
  auto t = Tokenizer::from_hf_dir(dir);
  EXPECT_EQ(t->kind(), "wordpiece");
  const auto j = nlohmann::json::parse(test::read_text(dir + "/sentences.json"));
  ASSERT_EQ(j["sentences"].size(), 6u);
  for (const auto& s : j["sentences"]) {
    EXPECT_EQ(t->encode(s["text"].get<std::string>(), true, false),
              s["token_ids"].get<std::vector<int32_t>>())
        << s["text"];
  }
  EXPECT_EQ(t->decode(t->encode("The cat sat on the mat.", true, false), true), "the cat sat on the mat.");
}

}  // namespace
}  // namespace ferrum
