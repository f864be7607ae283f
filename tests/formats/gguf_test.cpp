// GGUF reader/writer round trips: every value type, arrays, tensors of several types, alignment.
#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "ferrum/error.h"
#include "formats/gguf_writer.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::gguf {
namespace {

using test::error_of;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Gguf, RoundTripEveryValueType) {
  Writer w;
  w.set_string("s", "hello \xe2\x96\x81world");
  w.set_u8("u8", 200);
  w.set_i8("i8", -100);
  w.set_u16("u16", 60000);
  w.set_i16("i16", -30000);
  w.set_u32("u32", 4000000000u);
  w.set_i32("i32", -2000000000);
  w.set_u64("u64", 18000000000000000000ull);
  w.set_i64("i64", -9000000000000000000ll);
  w.set_f32("f32", 1.5f);
  w.set_f64("f64", -2.25);
  w.set_bool("b", true);
  w.set_string_array("sa", {"a", "", "\n<s>\n", std::string("x\0y", 3)});
  w.set_f32_array("fa", {1.0f, -2.5f, 3.25f});
  w.set_i32_array("ia", {1, -2, 3});
  w.set_u32_array("ua", {7, 8});
  w.set_i64_array("la", {-5, 1ll << 40});
  w.set_f64_array("da", {0.5, 1e300});
  w.set_u8_array("u8a", {1, 2, 255});
  w.set_bool_array("ba", {true, false});
  w.set_u32("u32", 42);  // replaces in place
  const std::string path = test::temp_dir() + "/all.gguf";
  w.write(path);

  auto f = File::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  const std::vector<std::string> order = {"s",   "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32",
                                          "f64", "b",  "sa", "fa",  "ia",  "ua",  "la",  "da",  "u8a", "ba"};
  EXPECT_EQ(f->keys(), order);
  EXPECT_EQ(f->get_string("s"), "hello \xe2\x96\x81world");
  EXPECT_EQ(f->type_of("u8"), ValueType::U8);
  EXPECT_EQ(f->get_uint("u8"), 200u);
  EXPECT_EQ(f->get_int("i8"), -100);
  EXPECT_EQ(f->get_uint("u16"), 60000u);
  EXPECT_EQ(f->get_int("i16"), -30000);
  EXPECT_EQ(f->type_of("u32"), ValueType::U32);
  EXPECT_EQ(f->get_uint("u32"), 42u);
  EXPECT_EQ(f->get_int("i32"), -2000000000);
  EXPECT_EQ(f->get_uint("u64"), 18000000000000000000ull);
  EXPECT_EQ(f->get_int("i64"), -9000000000000000000ll);
  EXPECT_EQ(f->get_float("f32"), 1.5);
  EXPECT_EQ(f->get_float("f64"), -2.25);
  EXPECT_EQ(f->get_float("i32"), -2000000000.0);  // integers accepted as floats
  EXPECT_TRUE(f->get_bool("b"));
  EXPECT_EQ(f->type_of("sa"), ValueType::ARRAY);
  EXPECT_EQ(f->array_type_of("sa"), ValueType::STRING);
  EXPECT_EQ(f->array_size("sa"), 4u);
  EXPECT_EQ(f->get_string_array("sa"),
            (std::vector<std::string>{"a", "", "\n<s>\n", std::string("x\0y", 3)}));
  EXPECT_EQ(f->get_float_array("fa"), (std::vector<float>{1.0f, -2.5f, 3.25f}));
  EXPECT_EQ(f->get_float_array("da"), (std::vector<float>{0.5f, static_cast<float>(1e300)}));
  EXPECT_EQ(f->get_int_array("ia"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f->get_int_array("ua"), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(f->get_int_array("la"), (std::vector<int64_t>{-5, 1ll << 40}));
  EXPECT_EQ(f->get_uint_array("u8a"), (std::vector<uint64_t>{1, 2, 255}));
  EXPECT_EQ(f->array_type_of("ba"), ValueType::BOOL);
  EXPECT_TRUE(f->tensors().empty());

  // find_* and missing/wrong-type errors.
  EXPECT_FALSE(f->find_string("nope").has_value());
  EXPECT_FALSE(f->find_uint("nope").has_value());
  EXPECT_FALSE(f->find_float("nope").has_value());
  EXPECT_FALSE(f->find_bool("nope").has_value());
  EXPECT_EQ(f->find_int("i8"), -100);
  EXPECT_NE(error_of([&] { f->get_string("nope"); }).find("metadata key 'nope' is missing"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f->find_string("u8"); }).find("metadata key 'u8' has type u8, expected string"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f->get_uint("i8"); }).find("'i8' is -100, expected a non-negative value"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f->get_int("u64"); }).find("does not fit"), std::string::npos);
  EXPECT_NE(error_of([&] { f->get_bool("u8"); }).find("expected bool"), std::string::npos);
  EXPECT_NE(error_of([&] { f->get_float("s"); }).find("has type string, expected a float"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f->get_string_array("fa"); }).find("has type array[f32], expected array[string]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f->get_float_array("ia"); }).find("has type array[i32]"), std::string::npos);
  EXPECT_NE(error_of([&] { f->array_size("s"); }).find("expected array"), std::string::npos);
  EXPECT_NE(error_of([&] { f->tensor("w"); }).find("tensor 'w' is missing"), std::string::npos);
  EXPECT_NE(error_of([&] { f->get_string("nope"); }).find(path), std::string::npos);

  // JSON: short arrays in full, long ones summarised.
  const auto j = f->metadata_json(3);
  EXPECT_EQ(j["u32"], 42);
  EXPECT_EQ(j["i64"], -9000000000000000000ll);
  EXPECT_EQ(j["fa"], nlohmann::json({1.0, -2.5, 3.25}));
  EXPECT_EQ(j["sa"]["count"], 4);
  EXPECT_EQ(j["sa"]["element_type"], "string");
  EXPECT_EQ(j["sa"]["head"].size(), 3u);
  EXPECT_EQ(f->value_json("sa").size(), 4u);
  EXPECT_NO_THROW(j.dump());
}

TEST(Gguf, TensorsOfSeveralTypesAndAlignment) {
  for (uint32_t align : {32u, 64u, 256u}) {
    Writer w;
    w.set_string("general.architecture", "test");
    if (align != 32) w.set_u32("general.alignment", align);
    const auto f32 = random_bytes(4 * 5 * 3, 1);            // 5x3 F32
    const auto f16 = random_bytes(2 * 7, 2);                // 7 F16 (odd size -> padding)
    const auto bf16 = random_bytes(2 * 8 * 2 * 3, 3);       // 8x2x3 BF16
    const auto q8 = random_bytes(34 * 2 * 4, 4);            // 64x4 Q8_0
    const auto q4k = random_bytes(144 * 1 * 2 * 1 * 2, 5);  // 256x2x1x2 Q4_K
    w.add_tensor("a.f32", DType::F32, {5, 3}, f32.data(), f32.size());
    w.add_tensor("b.f16", DType::F16, {7}, f16.data(), f16.size());
    w.add_tensor("c.bf16", DType::BF16, {8, 2, 3}, bf16.data(), bf16.size());
    w.add_tensor("d.q8", DType::Q8_0, {64, 4}, q8.data(), q8.size());
    w.add_tensor("e.q4k", DType::Q4_K, {256, 2, 1, 2}, q4k.data(), q4k.size());
    const std::string path = test::temp_dir() + "/t.gguf";
    w.write(path);

    auto f = File::open(path);
    EXPECT_EQ(f->alignment(), align);
    EXPECT_EQ(f->data_offset() % align, 0u);
    ASSERT_EQ(f->tensors().size(), 5u);
    const std::vector<std::pair<const char*, const std::vector<uint8_t>*>> want = {
        {"a.f32", &f32}, {"b.f16", &f16}, {"c.bf16", &bf16}, {"d.q8", &q8}, {"e.q4k", &q4k}};
    for (size_t i = 0; i < want.size(); ++i) {
      const TensorView& t = f->tensors()[i];
      EXPECT_EQ(t.name, want[i].first);
      EXPECT_EQ(&f->tensor(t.name), &t);
      EXPECT_EQ(t.nbytes, want[i].second->size());
      EXPECT_EQ(0, std::memcmp(t.data, want[i].second->data(), t.nbytes));
      EXPECT_EQ(f->tensor_offset(t) % align, 0u);
      EXPECT_EQ((t.data - f->mapping().data()) % align, 0);
    }
    const TensorView& c = f->tensor("c.bf16");
    EXPECT_EQ(c.type, DType::BF16);
    EXPECT_EQ(c.n_dims, 3);
    EXPECT_EQ(c.ne, (std::array<int64_t, 4>{8, 2, 3, 1}));
    EXPECT_EQ(f->tensor("e.q4k").n_dims, 4);
    EXPECT_EQ(f->tensor("e.q4k").rows(), 4);
    EXPECT_EQ(f->tensor("d.q8").row_bytes(), 68u);
    EXPECT_EQ(f->find_tensor("zzz"), nullptr);

    // Copy everything into a second file: byte-identical metadata and tensors.
    Writer w2;
    w2.copy_metadata_from(*f);
    for (const auto& t : f->tensors()) w2.add_tensor(t);
    const std::string path2 = test::temp_dir() + "/t2.gguf";
    w2.write(path2);
    auto g = File::open(path2);
    EXPECT_EQ(g->keys(), f->keys());
    EXPECT_EQ(g->metadata_json(), f->metadata_json());
    EXPECT_EQ(g->data_offset(), f->data_offset());
    for (size_t i = 0; i < f->tensors().size(); ++i) {
      EXPECT_EQ(g->tensors()[i].ne, f->tensors()[i].ne);
      EXPECT_EQ(0, std::memcmp(g->tensors()[i].data, f->tensors()[i].data, f->tensors()[i].nbytes));
    }
  }
}

TEST(Gguf, WriterValidatesTensors) {
  Writer w;
  std::vector<uint8_t> buf(1024);
  EXPECT_NE(error_of([&] {
              w.add_tensor("x", DType::F32, {4, 4}, buf.data(), 60);
            }).find("has 60 bytes of data, its shape needs 64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { w.add_tensor("x", DType::Q8_0, {48}, buf.data(), 51); }).find("block size 32"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              w.add_tensor("x", DType::Q4_Z, {32}, buf.data(), 19);
            }).find("has type Q4_Z (ferrum's in-memory type), which no GGUF file holds"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              w.add_tensor("x", DType::F32, {4, 0}, buf.data(), 0);
            }).find("dimension 1 is 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              w.add_tensor("x", DType::F32, {1, 1, 1, 1, 1}, buf.data(), 4);
            }).find("5 dimensions"),
            std::string::npos);
  w.add_tensor("x", DType::F32, {4}, buf.data(), 16);
  EXPECT_NE(
      error_of([&] { w.add_tensor("x", DType::F32, {4}, buf.data(), 16); }).find("duplicate tensor 'x'"),
      std::string::npos);
  w.set_u32("general.alignment", 48);
  EXPECT_NE(error_of([&] { w.write(test::temp_dir() + "/x.gguf"); }).find("power of two"), std::string::npos);
  // A failed write leaves no file behind, and an unwritable path is a clear error.
  w.set_u32("general.alignment", 32);
  EXPECT_NE(error_of([&] { w.write("/nonexistent-dir/x.gguf"); }).find("cannot create"), std::string::npos);
}

TEST(Gguf, LargeVocabularyIsFast) {
  std::vector<std::string> vocab(150000);
  for (size_t i = 0; i < vocab.size(); ++i) vocab[i] = "tok" + std::to_string(i * 7919);
  std::vector<float> scores(vocab.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  Writer w;
  w.set_string_array("tokenizer.ggml.tokens", vocab);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  const std::string path = test::temp_dir() + "/vocab.gguf";
  w.write(path);
  const auto t0 = std::chrono::steady_clock::now();
  auto f = File::open(path);
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  const auto s = f->get_float_array("tokenizer.ggml.scores");
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(tokens, vocab);
  EXPECT_EQ(s, scores);
  EXPECT_LT(ms, 500.0) << "opening and decoding a 150k vocabulary took " << ms << " ms";
}

}  // namespace
}  // namespace ferrum::gguf
