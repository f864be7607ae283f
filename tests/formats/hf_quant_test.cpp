// GPTQ/AWQ layers on small hand-made layers: the quantization_config fields and their refusals, the
// exact re-encoding (Q4_0 / Q5_0 / Q8_0) value by value, act-order column orders, and each error
// naming its tensor or field. The realistic files (tests/data/gptq) are checked in tests/models.
#include "formats/hf_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/fp16.h"
#include "core/quant.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::hfquant {
namespace {

using test::error_of;

hf::Config config_with(const nlohmann::json& qc) {
  nlohmann::json j = {{"model_type", "llama"}, {"quantization_config", qc}};
  return hf::Config::from_json(j, "dir/config.json");
}

nlohmann::json gptq_config(int bits = 4, int64_t group = 32) {
  return {{"quant_method", "gptq"}, {"bits", bits}, {"group_size", group},
          {"desc_act", false},      {"sym", true},  {"checkpoint_format", "gptq_v2"}};
}

TEST(HfQuantConfig, ReadsGptqAndAwq) {
  EXPECT_EQ(read_quant_config(hf::Config::from_json({{"model_type", "llama"}})).method, Method::None);
  QuantConfig g = read_quant_config(
      config_with({{"quant_method", "gptq"}, {"bits", 8}, {"group_size", -1}, {"desc_act", true}}));
  EXPECT_EQ(g.method, Method::Gptq);
  EXPECT_EQ(g.bits, 8);
  EXPECT_TRUE(g.zeros_minus_one);  // no checkpoint_format: AutoGPTQ's v1
  EXPECT_EQ(g.describe(), "GPTQ 8-bit, group per row, act-order");
  QuantConfig a = read_quant_config(config_with({{"quant_method", "AWQ"},
                                                 {"w_bit", 4},
                                                 {"q_group_size", 64},
                                                 {"zero_point", true},
                                                 {"version", "GEMM"}}));
  EXPECT_EQ(a.method, Method::Awq);
  EXPECT_EQ(a.group_size, 64);
  EXPECT_FALSE(a.zeros_minus_one);
  EXPECT_EQ(a.describe(), "AWQ 4-bit, group 64");
}

TEST(HfQuantConfig, RefusesWhatItDoesNotRunNamingTheField) {
  const struct {
    nlohmann::json qc;
    std::string want;
  } cases[] = {
      {{{"bits", 4}}, "quantization_config.quant_method is missing"},
      {{{"quant_method", "bitsandbytes"}}, "quantization_config.quant_method is 'bitsandbytes'"},
      {{{"quant_method", "gptq"}, {"bits", 3}},
       "quantization_config.bits is 3: ferrum runs 4-bit and 8-bit GPTQ"},
      {{{"quant_method", "gptq"}}, "quantization_config.bits is missing"},
      {{{"quant_method", "gptq"}, {"bits", "4"}},
       "quantization_config.bits is a JSON string, expected an integer"},
      {{{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 16}}, "quantization_config.group_size is 16"},
      {{{"quant_method", "gptq"}, {"bits", 4}, {"desc_act", "yes"}},
       "quantization_config.desc_act is a JSON string"},
      {{{"quant_method", "gptq"}, {"bits", 4}, {"checkpoint_format", "marlin"}},
       "quantization_config.checkpoint_format is 'marlin'"},
      {{{"quant_method", "awq"}, {"bits", 8}}, "quantization_config.bits is 8: ferrum runs 4-bit AWQ"},
      {{{"quant_method", "awq"}, {"bits", 4}, {"version", "gemv"}}, "quantization_config.version is 'gemv'"},
      {{{"quant_method", "awq"}, {"bits", 4}, {"zero_point", false}},
       "quantization_config.zero_point is false"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { read_quant_config(config_with(c.qc)); });
    EXPECT_NE(e.find("dir/config.json: " + c.want), std::string::npos) << c.qc.dump() << "\n" << e;
  }
}

// A GPTQ layer of `out` outputs and `in` inputs written as a safetensors file, from q, zero and
// scale tables, packed as AutoGPTQ packs them (v2: zero points as they are).
struct Layer {
  int bits = 4;
  int64_t in = 64, out = 8, groups = 2;
  std::vector<int> q;          // [in][out]
  std::vector<int> zero;       // [groups][out]
  std::vector<float> scale;    // [groups][out]
  std::vector<int32_t> g_idx;  // [in]
  std::string scale_dtype = "F16";

  std::string write(const std::string& dir) const {
    const int per = 32 / bits;
    std::vector<uint32_t> qw(in / per * out, 0), qz(groups * out / per, 0);
    for (int64_t c = 0; c < in; ++c)
      for (int64_t o = 0; o < out; ++o)
        qw[(c / per) * out + o] |= static_cast<uint32_t>(q[c * out + o]) << (bits * (c % per));
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t o = 0; o < out; ++o)
        qz[g * (out / per) + o / per] |= static_cast<uint32_t>(zero[g * out + o]) << (bits * (o % per));
    std::string sc;
    for (float s : scale) {
      if (scale_dtype == "F16") {
        const uint16_t h = f32_to_f16(s);
        sc.append(reinterpret_cast<const char*>(&h), 2);
      } else {
        sc.append(reinterpret_cast<const char*>(&s), 4);
      }
    }
    const std::string path = dir + "/model.safetensors";
    test::write_safetensors(path, {{"l.qweight", "I32", {in / per, out}, test::bytes_of(qw)},
                                   {"l.qzeros", "I32", {groups, out / per}, test::bytes_of(qz)},
                                   {"l.scales", scale_dtype, {groups, out}, sc},
                                   {"l.g_idx", "I32", {in}, test::bytes_of(g_idx)}});
    return path;
  }
  float weight(int64_t o, int64_t c) const {
    const int g = g_idx[c];
    return f16_to_f32(f32_to_f16(scale[g * out + o])) *
           static_cast<float>(q[c * out + o] - zero[g * out + o]);
  }
};

Layer make_layer(int bits, bool symmetric, uint32_t seed) {
  Layer L;
  L.bits = bits;
  const int maxq = (1 << bits) - 1;
  uint32_t s = seed;
  auto rnd = [&] { return (s = s * 1664525u + 1013904223u) >> 8; };
  for (int64_t i = 0; i < L.in * L.out; ++i) L.q.push_back(static_cast<int>(rnd() % (maxq + 1)));
  for (int64_t i = 0; i < L.groups * L.out; ++i) {
    L.zero.push_back(symmetric ? 1 << (bits - 1) : static_cast<int>(rnd() % (maxq + 1)));
    L.scale.push_back(0.001f * static_cast<float>(1 + rnd() % 100));
  }
  for (int64_t c = 0; c < L.in; ++c) L.g_idx.push_back(static_cast<int32_t>(c / 32));
  return L;
}

struct Decoded {
  TensorView view;
  std::vector<std::vector<uint8_t>> owned;
};

Decoded decode(const Layer& L, const nlohmann::json& qc, Storage storage = Storage::Memory) {
  const std::string dir = test::temp_dir();
  L.write(dir);
  const auto st = safetensors::Tensors::open_dir(dir);
  Decoded d;
  d.view = decode_linear(
      read_quant_config(config_with(qc)), st, "l", "blk.0.x.weight",
      [&](size_t n) { return d.owned.emplace_back(n).data(); }, storage);
  return d;
}

// Every weight of the decoded matrix equals scale * (q - zero) of the layer, column by column
// through input_order.
void expect_exact(const Layer& L, const TensorView& v) {
  ASSERT_EQ(v.cols(), L.in);
  ASSERT_EQ(v.rows(), L.out);
  std::vector<float> row(L.in);
  for (int64_t o = 0; o < L.out; ++o) {
    dequantize_row(v.type, v.row(o), row.data(), L.in);
    for (int64_t j = 0; j < L.in; ++j) {
      const int64_t c = v.input_order ? v.input_order[j] : j;
      ASSERT_EQ(row[j], L.weight(o, c)) << "output " << o << ", input " << c;
    }
  }
}

TEST(HfQuantLayer, SymmetricFourBitIsQ4_0Exactly) {
  const Layer L = make_layer(4, true, 1);
  const Decoded d = decode(L, gptq_config());
  EXPECT_EQ(d.view.type, DType::Q4_0);
  EXPECT_EQ(d.view.input_order, nullptr);
  expect_exact(L, d.view);
}

// Asymmetric 4-bit layers stay 4-bit in memory (Q4_Z: 19 bytes per 32 weights); for a GGUF file they
// are Q5_0 (22 bytes), the smallest GGUF type holding every q - zero.
TEST(HfQuantLayer, AsymmetricFourBitIsQ4_ZInMemoryAndQ5_0ForGguf) {
  Layer L = make_layer(4, false, 2);
  L.zero[0] = 0, L.zero[1] = 15;  // the ends of the range: q - zero from -15 to 15
  const Decoded d = decode(L, gptq_config());
  EXPECT_EQ(d.view.type, DType::Q4_Z);
  EXPECT_EQ(d.view.nbytes, static_cast<size_t>(L.out * L.in / 32 * 19));
  expect_exact(L, d.view);
  const Decoded g = decode(L, gptq_config(), Storage::Gguf);
  EXPECT_EQ(g.view.type, DType::Q5_0);
  expect_exact(L, g.view);
}

TEST(HfQuantLayer, GptqV1StoresZeroMinusOne) {
  Layer L = make_layer(4, false, 3);
  for (int& z : L.zero) z = std::max(z, 1);
  L.zero[2] = 16;  // stored as 15: the largest v1 zero point (q - 16 from -16 to -1)
  Layer stored = L;
  for (int& z : stored.zero) z -= 1;
  nlohmann::json qc = gptq_config();
  qc["checkpoint_format"] = "gptq";
  const std::string dir = test::temp_dir();
  stored.write(dir);
  const auto st = safetensors::Tensors::open_dir(dir);
  std::vector<std::vector<uint8_t>> owned;
  const TensorView v = decode_linear(read_quant_config(config_with(qc)), st, "l", "w",
                                     [&](size_t n) { return owned.emplace_back(n).data(); });
  expect_exact(L, v);
}

TEST(HfQuantLayer, SymmetricEightBitIsQ8_0AndAsymmetricIsRefused) {
  const Layer L = make_layer(8, true, 4);
  const Decoded d = decode(L, gptq_config(8));
  EXPECT_EQ(d.view.type, DType::Q8_0);
  expect_exact(L, d.view);
  const Layer A = make_layer(8, false, 5);
  EXPECT_NE(error_of([&] { decode(A, gptq_config(8)); }).find("'l' has zero point"), std::string::npos);
}

TEST(HfQuantLayer, ActOrderColumnsAreSortedByGroup) {
  Layer L = make_layer(4, true, 6);
  for (int64_t c = 0; c < L.in; ++c)
    L.g_idx[c] = static_cast<int32_t>((c * 7 + 3) % 2);  // interleaved groups
  const Decoded d = decode(L, gptq_config());
  ASSERT_NE(d.view.input_order, nullptr);
  for (int64_t j = 0; j < L.in; ++j) EXPECT_EQ(L.g_idx[d.view.input_order[j]], j < 32 ? 0 : 1);
  expect_exact(L, d.view);
}

TEST(HfQuantLayer, RefusalsNameTheTensor) {
  Layer split = make_layer(4, true, 7);
  split.groups = 4;
  split.zero.resize(4 * split.out, 8);
  split.scale.resize(4 * split.out, 0.01f);
  for (int64_t c = 0; c < split.in; ++c) split.g_idx[c] = static_cast<int32_t>(c / 16);  // groups of 16
  EXPECT_NE(error_of([&] {
              decode(split, gptq_config());
            }).find("share a 32-column block but are in groups 0 and 1"),
            std::string::npos);

  Layer range = make_layer(4, true, 8);
  range.g_idx[5] = 9;
  EXPECT_NE(error_of([&] { decode(range, gptq_config()); }).find("input column 5 of 'l' is in group 9"),
            std::string::npos);

  Layer tiny = make_layer(4, true, 9);
  tiny.scale_dtype = "F32";
  for (float& v : tiny.scale) v = f16_to_f32(f32_to_f16(v));  // F32 scales F16 holds are accepted
  tiny.scale[3] = 1e-30f;
  const std::string te = error_of([&] { decode(tiny, gptq_config()); });
  EXPECT_NE(te.find("'l.scales' holds 1e-30 (group 0, output 3)"), std::string::npos) << te;

  const Layer ok = make_layer(4, true, 10);
  const std::string dir = test::temp_dir();
  ok.write(dir);
  // qzeros of the wrong width
  test::write_safetensors(dir + "/model.safetensors", {{"l.qweight", "I32", {8, 8}, std::string(256, '\0')},
                                                       {"l.qzeros", "I32", {2, 2}, std::string(16, '\0')},
                                                       {"l.scales", "F16", {2, 8}, std::string(32, '\0')}});
  const auto st = safetensors::Tensors::open_dir(dir);
  std::vector<std::vector<uint8_t>> owned;
  const std::string e = error_of([&] {
    decode_linear(read_quant_config(config_with(gptq_config())), st, "l", "w",
                  [&](size_t n) { return owned.emplace_back(n).data(); });
  });
  EXPECT_NE(e.find("do not fit one 4-bit layer of 8 outputs"), std::string::npos) << e;
}

TEST(HfQuantLayer, AwqNibbleOrder) {
  // One input row of AWQ: nibble k of a word holds output (0,2,4,6,1,3,5,7)[k].
  const int64_t in = 32, out = 8;
  std::vector<uint32_t> qw(in, 0), qz(1, 0);
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  for (int64_t c = 0; c < in; ++c)
    for (int k = 0; k < 8; ++k) qw[c] |= static_cast<uint32_t>((order[k] + c) % 16) << (4 * k);
  for (int k = 0; k < 8; ++k) qz[0] |= static_cast<uint32_t>(order[k]) << (4 * k);  // zero of output o = o
  std::vector<uint16_t> sc(out, f32_to_f16(0.5f));
  const std::string dir = test::temp_dir();
  test::write_safetensors(dir + "/model.safetensors",
                          {{"l.qweight", "I32", {in, out / 8}, test::bytes_of(qw)},
                           {"l.qzeros", "I32", {1, out / 8}, test::bytes_of(qz)},
                           {"l.scales", "F16", {1, out}, test::bytes_of(sc)}});
  const auto st = safetensors::Tensors::open_dir(dir);
  std::vector<std::vector<uint8_t>> owned;
  const QuantConfig q = read_quant_config(
      config_with({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}, {"version", "gemm"}}));
  const TensorView v = decode_linear(q, st, "l", "w", [&](size_t n) { return owned.emplace_back(n).data(); });
  EXPECT_EQ(v.type, DType::Q4_Z);
  std::vector<float> row(in);
  for (int64_t o = 0; o < out; ++o) {
    dequantize_row(v.type, v.row(o), row.data(), in);
    for (int64_t c = 0; c < in; ++c)
      ASSERT_EQ(row[c], 0.5f * static_cast<float>((o + c) % 16 - o)) << o << " " << c;
  }
}

TEST(HfQuantLayer, QuantPartsAreRecognised) {
  for (const char* n : {"a.qweight", "a.qzeros", "a.scales", "a.g_idx"}) EXPECT_TRUE(is_quant_part(n)) << n;
  for (const char* n : {"a.weight", "qweight", "a.bias"}) EXPECT_FALSE(is_quant_part(n)) << n;
}

}  // namespace
}  // namespace ferrum::hfquant
