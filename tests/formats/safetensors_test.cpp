// Safetensors: single files, sharded directories, GGUF dimension order, and bad headers.
#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fp16.h"
#include "ferrum/error.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::safetensors {
namespace {

using test::error_of;
using test::StTensor;

void write_st(const std::string& path, const std::vector<StTensor>& ts,
              const std::function<void(nlohmann::json&)>& tweak = {}) {
  test::write_safetensors(path, ts, tweak);
}
std::string f32_bytes(std::vector<float> v) {
  return test::bytes_of(v);
}
std::string u16_bytes(std::vector<uint16_t> v) {
  return test::bytes_of(v);
}

TEST(Safetensors, SingleFileShapesAndTypes) {
  const std::string dir = test::temp_dir();
  std::vector<float> m(6);
  for (int i = 0; i < 6; ++i) m[i] = static_cast<float>(i) + 0.5f;
  write_st(dir + "/model.safetensors",
           {{"w", "F32", {2, 3}, f32_bytes(m)},
            {"h", "F16", {4}, u16_bytes({f32_to_f16(1), f32_to_f16(-2), f32_to_f16(0.5f), f32_to_f16(3)})},
            {"b",
             "BF16",
             {1, 2, 2},
             u16_bytes({f32_to_bf16(1), f32_to_bf16(2), f32_to_bf16(3), f32_to_bf16(4)})}});
  for (const auto& t : {Tensors::open_dir(dir), Tensors::open_file(dir + "/model.safetensors")}) {
    EXPECT_EQ(t.names(), (std::vector<std::string>{"w", "h", "b"}));  // data order
    const TensorView& w = t.get("w");
    EXPECT_EQ(w.type, DType::F32);
    EXPECT_EQ(w.n_dims, 2);
    EXPECT_EQ(w.ne[0], 3);  // [rows=2, cols=3] -> ne = {3, 2}
    EXPECT_EQ(w.ne[1], 2);
    EXPECT_EQ(w.nbytes, 24u);
    EXPECT_EQ(0, std::memcmp(w.row(1), m.data() + 3, 12));
    EXPECT_EQ(t.get("h").type, DType::F16);
    EXPECT_EQ(f16_to_f32(reinterpret_cast<const uint16_t*>(t.get("h").data)[1]), -2.0f);
    const TensorView& b = t.get("b");
    EXPECT_EQ(b.type, DType::BF16);
    EXPECT_EQ(b.ne, (std::array<int64_t, 4>{2, 2, 1, 1}));
    EXPECT_EQ(bf16_to_f32(reinterpret_cast<const uint16_t*>(b.data)[3]), 4.0f);
    EXPECT_EQ(t.find("zzz"), nullptr);
    const std::string err = error_of([&] { t.get("zzz"); });
    EXPECT_NE(err.find("tensor 'zzz' is missing"), std::string::npos) << err;
  }
}

TEST(Safetensors, ShardedDirectory) {
  const std::string dir = test::temp_dir();
  write_st(dir + "/model-00001-of-00002.safetensors", {{"a", "F32", {2}, f32_bytes({1, 2})}});
  write_st(dir + "/model-00002-of-00002.safetensors",
           {{"b", "F32", {1}, f32_bytes({3})}, {"c", "F32", {3}, f32_bytes({4, 5, 6})}});
  nlohmann::json idx = {{"metadata", {{"total_size", 24}}},
                        {"weight_map",
                         {{"a", "model-00001-of-00002.safetensors"},
                          {"b", "model-00002-of-00002.safetensors"},
                          {"c", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(dir + "/model.safetensors.index.json") << idx.dump();
  auto t = Tensors::open_dir(dir);
  EXPECT_EQ(t.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(reinterpret_cast<const float*>(t.get("c").data)[2], 6.0f);
  EXPECT_NE(t.file_of("b").find("model-00002-of-00002"), std::string::npos);

  // A weight_map entry that no shard has.
  idx["weight_map"]["d"] = "model-00001-of-00002.safetensors";
  std::ofstream(dir + "/model.safetensors.index.json") << idx.dump();
  std::string err = error_of([&] { Tensors::open_dir(dir); });
  EXPECT_NE(err.find("tensor 'd' is listed in the weight_map"), std::string::npos) << err;
  // A missing shard file.
  idx["weight_map"]["d"] = "model-00003-of-00002.safetensors";
  std::ofstream(dir + "/model.safetensors.index.json") << idx.dump();
  err = error_of([&] { Tensors::open_dir(dir); });
  EXPECT_NE(err.find("model-00003-of-00002.safetensors: cannot open"), std::string::npos) << err;
  // Not a model directory at all.
  err = error_of([&] { Tensors::open_dir(test::temp_dir()); });
  EXPECT_NE(err.find("no model.safetensors"), std::string::npos) << err;
}

TEST(Safetensors, BadHeaders) {
  const std::string dir = test::temp_dir();
  const std::string p = dir + "/x.safetensors";
  auto err_for = [&](const std::vector<StTensor>& ts, const std::function<void(nlohmann::json&)>& tweak) {
    write_st(p, ts, tweak);
    return error_of([&] { Tensors::open_file(p); });
  };
  const std::vector<StTensor> one = {{"w", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})}};
  {  // Other dtypes are skipped at open and refused on use.
    write_st(p, {one[0], {"position_ids", "I64", {2}, std::string(16, '\0')}});
    const auto t = Tensors::open_file(p);
    EXPECT_EQ(t.names(), std::vector<std::string>{"w"});
    EXPECT_EQ(t.unsupported().at("position_ids"), "I64");
    const std::string e = error_of([&] { t.get("position_ids"); });
    EXPECT_NE(
        e.find("tensor 'position_ids' has dtype I64, unsupported (only F32, F16, BF16, I32 and U8 are)"),
        std::string::npos)
        << e;
  }
  EXPECT_NE(err_for(one,
                    [](auto& h) {
                      h["w"]["shape"] = {2, 3};
                    })
                .find("needs 24 bytes, but its data_offsets [0, 16] span 16"),
            std::string::npos);
  EXPECT_NE(err_for(one,
                    [](auto& h) {
                      h["w"]["data_offsets"] = {0, 32};
                    })
                .find("outside the 16 data bytes"),
            std::string::npos);
  EXPECT_NE(err_for(one,
                    [](auto& h) {
                      h["w"]["data_offsets"] = {8, 4};
                    })
                .find("data_offsets [8, 4]"),
            std::string::npos);
  EXPECT_NE(err_for(one,
                    [](auto& h) {
                      h["w"]["data_offsets"] = {-1, 4};
                    })
                .find("'data_offsets': [begin, end]"),
            std::string::npos);
  EXPECT_NE(err_for(one,
                    [](auto& h) {
                      h["w"]["shape"] = {2, 0};
                    })
                .find("dimension 1 must be a positive integer"),
            std::string::npos);
  EXPECT_NE(err_for(one,
                    [](auto& h) {
                      h["w"]["shape"] = {1, 1, 1, 1, 4};
                    })
                .find("5 dimensions"),
            std::string::npos);
  EXPECT_NE(err_for(one, [](auto& h) { h["w"].erase("dtype"); }).find("no string field 'dtype'"),
            std::string::npos);

  // Header length beyond the file, truncated files and invalid JSON.
  {
    std::ofstream f(p, std::ios::binary);
    uint64_t n = 1000;
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << "{}";
  }
  EXPECT_NE(error_of([&] {
              Tensors::open_file(p);
            }).find("header length 1000 at offset 0 exceeds the file size 10"),
            std::string::npos);
  std::ofstream(p, std::ios::binary) << "abc";
  EXPECT_NE(error_of([&] { Tensors::open_file(p); }).find("not a safetensors file"), std::string::npos);
  {
    std::ofstream f(p, std::ios::binary);
    uint64_t n = 5;
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << "{\"a\":";
  }
  EXPECT_NE(error_of([&] { Tensors::open_file(p); }).find("bad safetensors JSON header"), std::string::npos);
}

}  // namespace
}  // namespace ferrum::safetensors
