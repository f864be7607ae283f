// llama2.c checkpoint/tokenizer reading and the llama2.c -> GGUF converter, checked against the
// reference conversion shared/fixtures/stories260K/gguf/stories260K-F32.gguf (its metadata and
// per-tensor FNV-1a hashes are in tests/data/formats/stories260K/stories260K-F32.reference.json).
#include "formats/llama2c.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/fail.h"
#include "formats/convert_llama2c.h"
#include "formats/gguf.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::llama2c_test {
namespace {

const std::string kBin = "formats/stories260K/stories260K.bin";
const std::string kTok = "formats/stories260K/tok512.bin";

using test::error_of;

using test::fnv1a64;
using test::read_file;

std::string type_string(const gguf::File& f, const std::string& k) {
  std::string s = gguf::value_type_name(f.type_of(k));
  if (f.type_of(k) == gguf::ValueType::ARRAY)
    s += std::string("[") + gguf::value_type_name(f.array_type_of(k)) + "]";
  return s;
}

TEST(Llama2c, ReadsCheckpointAndTokenizer) {
  const auto ck = llama2c::Checkpoint::open(test::data_path(kBin));
  const auto& c = ck.config();
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ(ck.layers().size(), 5u);
  EXPECT_EQ(ck.layers()[0].wk.ne[0], 64);
  EXPECT_EQ(ck.layers()[0].wk.ne[1], 32);
  EXPECT_EQ(ck.layers()[4].w2.ne[0], 172);
  EXPECT_EQ(ck.wcls().data, ck.token_embedding().data);
  // The first weight follows the 28-byte header.
  EXPECT_EQ(ck.token_embedding().data - 28, ck.layers()[0].rms_att.data - 28 - 512 * 64 * 4);

  const auto tok = llama2c::read_tokenizer(test::data_path(kTok), 512);
  ASSERT_EQ(tok.tokens.size(), 512u);
  EXPECT_EQ(tok.tokens[0], "<unk>");
  EXPECT_EQ(tok.tokens[1], "\n<s>\n");
  EXPECT_EQ(tok.tokens[2], "\n</s>\n");
  EXPECT_EQ(tok.tokens[3 + 0x41], "<0x41>");
  EXPECT_EQ(llama2c::read_tokenizer(test::data_path(kTok)).tokens, tok.tokens);  // read to EOF
}

TEST(Llama2c, ConvertMatchesReferenceGguf) {
  const std::string out = test::temp_dir() + "/stories260K.gguf";
  convert_llama2c_to_gguf(test::data_path(kBin), test::data_path(kTok), out);
  const auto f = gguf::File::open(out);
  const auto ref =
      nlohmann::json::parse(read_file(test::data_path("formats/stories260K/stories260K-F32.reference.json")));

  // Every reference key with the same type and value (the description/license strings of the
  // fixture generator excepted), and no key the reference lacks.
  const std::set<std::string> skip = {"general.description", "general.license"};
  std::set<std::string> ref_keys;
  for (const auto& kv : ref["metadata"]) {
    const std::string k = kv["key"];
    ref_keys.insert(k);
    if (skip.count(k)) continue;
    ASSERT_TRUE(f->has(k)) << k;
    EXPECT_EQ(type_string(*f, k), kv["type"].get<std::string>()) << k;
    EXPECT_EQ(f->value_json(k), kv["value"]) << k;
  }
  for (const auto& k : f->keys()) EXPECT_TRUE(ref_keys.count(k)) << "unexpected key " << k;
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")[300],
            "\xe2\x96\x81"
            "ha");

  // Every tensor: same name, order, type, shape and bytes.
  ASSERT_EQ(f->tensors().size(), ref["tensors"].size());
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    const TensorView& t = f->tensors()[i];
    const auto& r = ref["tensors"][i];
    EXPECT_EQ(t.name, r["name"].get<std::string>());
    EXPECT_EQ(std::string(dtype_name(t.type)), r["type"].get<std::string>());
    EXPECT_EQ(std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
              r["ne"].get<std::vector<int64_t>>())
        << t.name;
    EXPECT_EQ(fmt::format("{:016x}", fnv1a64(t.data, t.nbytes)), r["fnv1a64"].get<std::string>()) << t.name;
  }
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // shared classifier
}

TEST(Llama2c, BadInputs) {
  const std::string dir = test::temp_dir();
  const std::string bin = read_file(test::data_path(kBin));
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    return dir + "/" + name;
  };
  std::string e =
      error_of([&] { llama2c::Checkpoint::open(write("short.bin", bin.substr(0, bin.size() - 4))); });
  EXPECT_NE(e.find("implies a file of 1056540 bytes, but it has 1056536"), std::string::npos) << e;
  e = error_of([&] { llama2c::Checkpoint::open(write("tiny.bin", bin.substr(0, 10))); });
  EXPECT_NE(e.find("too small for a llama2.c checkpoint"), std::string::npos) << e;
  std::string neg = bin;
  const int32_t minus = -5;
  std::memcpy(neg.data() + 8, &minus, 4);  // n_layers
  e = error_of([&] { llama2c::Checkpoint::open(write("neg.bin", neg)); });
  EXPECT_NE(e.find("header field n_layers (offset 8) is -5"), std::string::npos) << e;
  std::string huge = bin;
  const int32_t big = 1 << 30;
  std::memcpy(huge.data(), &big, 4);  // dim
  e = error_of([&] { llama2c::Checkpoint::open(write("huge.bin", huge)); });
  EXPECT_NE(e.find("but it has 1056540"), std::string::npos) << e;
  // Separate classifier flag (negative vocab) without the extra weights.
  std::string sep = bin;
  const int32_t mv = -512;
  std::memcpy(sep.data() + 20, &mv, 4);
  e = error_of([&] { llama2c::Checkpoint::open(write("sep.bin", sep)); });
  EXPECT_NE(e.find("implies a file of 1187612 bytes"), std::string::npos) << e;
  // ...and with them: the converter writes output.weight.
  sep += std::string(512 * 64 * 4, '\0');
  const std::string out = dir + "/sep.gguf";
  convert_llama2c_to_gguf(write("sep.bin", sep), test::data_path(kTok), out);
  EXPECT_EQ(gguf::File::open(out)->tensor("output.weight").ne[1], 512);

  const std::string tok = read_file(test::data_path(kTok));
  e = error_of([&] { llama2c::read_tokenizer(write("t.bin", tok.substr(0, tok.size() - 3)), 512); });
  EXPECT_NE(e.find("token 511"), std::string::npos) << e;
  e = error_of([&] { llama2c::read_tokenizer(write("t.bin", tok + "xx"), 512); });
  EXPECT_NE(e.find("2 unexpected bytes after the 512 tokens"), std::string::npos) << e;
  e = error_of([&] { llama2c::read_tokenizer(test::data_path(kTok), 1000); });
  EXPECT_NE(e.find("1000 tokens need at least 8004 bytes, but the file has only 6227"), std::string::npos)
      << e;
  // The converter checks the tokenizer against the checkpoint's vocabulary size.
  e = error_of([&] {
    convert_llama2c_to_gguf(test::data_path(kBin), write("t.bin", tok.substr(0, tok.size() - 3)), out);
  });
  EXPECT_NE(e.find("t.bin"), std::string::npos) << e;
}

}  // namespace
}  // namespace ferrum::llama2c_test
