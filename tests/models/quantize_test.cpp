// `ferrum quantize` presets choose per-tensor types as llama-quantize does: the matrix that
// produces the logits (output.weight, or token_embd.weight when the embeddings are tied) gets
// Q6_K in the K-quant and 4/5-bit presets, *_M presets give some attn_v / ffn_down Q6_K, and
// norms stay F32.
#include "models/quantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/quant.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/imatrix.h"
#include "model_test_util.h"
#include "models/quant_recipe.h"
#include "test_util.h"

namespace ferrum {
namespace {

struct TinyModel {
  std::vector<std::vector<float>> data;
  gguf::Writer w;
  void add(const std::string& name, std::vector<int64_t> ne) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    data.emplace_back(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data.back()[i] = static_cast<float>((i * 37 % 101) - 50) / 50.0f;
    w.add_tensor(name, DType::F32, ne, data.back().data(), static_cast<size_t>(n) * 4);
  }
  // Two layers, width 256; `tied`: no output.weight (the logits come from token_embd).
  std::string write(bool tied) {
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    add("token_embd.weight", {256, 32});
    if (!tied) add("output.weight", {256, 32});
    add("output_norm.weight", {256});
    for (int l = 0; l < 2; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      add(b + "attn_norm.weight", {256});
      add(b + "attn_q.weight", {256, 256});
      add(b + "attn_v.weight", {256, 64});
      add(b + "ffn_down.weight", {256, 256});
    }
    // A directory of this process's own: ctest may run this test in two processes at once.
    const auto path =
        std::filesystem::path(test::temp_dir()) / (std::string(tied ? "tied" : "untied") + ".gguf");
    w.write(path.string());
    return path.string();
  }
};

DType type_of(const gguf::File& f, const std::string& name) {
  return f.tensor(name).type;
}

TEST(Quantize, TiedEmbeddingsAreTheOutputMatrix) {
  TinyModel m;
  const std::string in = m.write(/*tied=*/true), out = in + ".q4_k_m.gguf";
  quantize_model(in, out, "Q4_K_M", 1);
  auto f = gguf::File::open(out);
  EXPECT_EQ(type_of(*f, "token_embd.weight"), DType::Q6_K);
  EXPECT_EQ(type_of(*f, "blk.0.attn_q.weight"), DType::Q4_K);
  // *_M: attn_v / ffn_down of the layers llama.cpp's use_more_bits picks (of 2: layer 1) get Q6_K.
  EXPECT_EQ(type_of(*f, "blk.0.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(type_of(*f, "blk.1.attn_v.weight"), DType::Q6_K);
  EXPECT_EQ(type_of(*f, "blk.1.ffn_down.weight"), DType::Q6_K);
  EXPECT_EQ(type_of(*f, "output_norm.weight"), DType::F32);
  quantize_model(in, out, "Q4_0", 1);
  EXPECT_EQ(type_of(*gguf::File::open(out), "token_embd.weight"), DType::Q6_K);
  quantize_model(in, out, "Q8_0", 1);
  EXPECT_EQ(type_of(*gguf::File::open(out), "token_embd.weight"), DType::Q8_0);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(Quantize, UntiedEmbeddingsKeepTheBaseType) {
  TinyModel m;
  const std::string in = m.write(/*tied=*/false), out = in + ".q4_k_m.gguf";
  quantize_model(in, out, "Q4_K_M", 1);
  auto f = gguf::File::open(out);
  EXPECT_EQ(type_of(*f, "output.weight"), DType::Q6_K);
  EXPECT_EQ(type_of(*f, "token_embd.weight"), DType::Q4_K);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

// Mean |logit - F32 logit| over p3 of a quantized file (exact path).
double distance_from_f32(const std::string& path) {
  auto model = test::open_model(path, Precision::Exact);
  auto ids = test::prompt_ids("llama", "p3");
  auto ref = test::load_npy(test::model_file("llama", "logits/F32/p3.npy"));
  return test::compare(test::all_logits(*model, ids), ref.data, ids.size(), model->config().n_vocab).mean_abs;
}

// Our quantizers against llama-quantize's on the llama fixture, per preset: the model ferrum
// quantizes is at least as close to the F32 model as the file llama-quantize made (the K and IQ4
// presets without an importance matrix, the IQ1/IQ2/IQ3 presets with the fixture's, as
// llama-quantize was given it).
void expect_as_good_as_llama_quantize(const std::vector<const char*>& presets, const std::string& imatrix,
                                      const std::string& theirs_prefix = "gguf/llama-") {
  const std::string f32 = test::model_file("llama", "gguf/llama-F32.gguf");
  for (const char* preset : presets) {
    const std::string out =
        test::temp_dir() + "/llama-" + preset + (imatrix.empty() ? "" : "-imatrix") + ".gguf";
    quantize_model(f32, out, preset, 2, {}, imatrix);
    const std::string theirs_path = test::model_file("llama", theirs_prefix + preset + ".gguf");
    auto ours_f = gguf::File::open(out), theirs_f = gguf::File::open(theirs_path);
    for (const TensorView& t : theirs_f->tensors()) EXPECT_EQ(ours_f->tensor(t.name).type, t.type) << t.name;
    const double ours = distance_from_f32(out), theirs = distance_from_f32(theirs_path);
    std::printf("  %-7s mean |logit - F32|: ferrum %.4f llama-quantize %.4f\n", preset, ours, theirs);
    EXPECT_LE(ours, 1.1 * theirs) << preset;
    std::filesystem::remove(out);
  }
}

TEST(Quantize, PresetsAsGoodAsLlamaQuantize) {
  expect_as_good_as_llama_quantize({"Q4_1", "Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "IQ4_XS", "Q4_K_M"}, "");
}

TEST(Quantize, ImatrixPresetsAsGoodAsLlamaQuantize) {
  expect_as_good_as_llama_quantize({"IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_M", "IQ1_S", "IQ1_M"},
                                   test::model_file("llama", "imatrix.gguf"));
}

// The K-quant presets with the importance matrix (every Q2_K..Q6_K tensor weighing its columns'
// errors by it) against llama-quantize's files made with the same one
// (tests/data/models/llama/gguf/imatrix/).
TEST(Quantize, ImatrixKQuantPresetsAsGoodAsLlamaQuantize) {
  expect_as_good_as_llama_quantize({"Q4_K_M", "Q3_K_M", "Q2_K"}, test::model_file("llama", "imatrix.gguf"),
                                   "gguf/imatrix/llama-");
}

// The presets whose low-bit tensors need an importance matrix refuse without one, naming the
// first such tensor, before writing anything; with one, the file records it as llama-quantize does.
TEST(Quantize, ImatrixPresetsNeedAnImportanceMatrix) {
  const std::string f32 = test::model_file("llama", "gguf/llama-F32.gguf");
  const std::string out = test::temp_dir() + "/llama-needs-imatrix.gguf";
  std::filesystem::remove(out);
  for (const char* preset : {"IQ2_XXS", "IQ1_S", "IQ3_XXS", "Q2_K_S"}) {
    const std::string msg = test::error_of([&] { quantize_model(f32, out, preset, 1); });
    EXPECT_NE(msg.find(std::string("preset ") + preset + " writes tensor 'blk.0."), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs an importance matrix: make one with llama-imatrix and pass --imatrix FILE"),
              std::string::npos)
        << msg;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  const std::string imatrix = test::model_file("llama", "imatrix.gguf");
  quantize_model(f32, out, "IQ2_XXS", 2, {}, imatrix);
  auto f = gguf::File::open(out);
  EXPECT_EQ(f->get_string("quantize.imatrix.file"), imatrix);
  EXPECT_EQ(f->get_int("quantize.imatrix.entries_count"), 14);
  EXPECT_EQ(f->get_int("quantize.imatrix.chunks_count"), 40);
  EXPECT_EQ(f->get_uint("general.file_type"), 19u);
  // An importance matrix of another model: its sizes do not match.
  TinyModel m;
  const std::string tiny = m.write(/*tied=*/false);
  const std::string msg = test::error_of([&] { quantize_model(tiny, out, "IQ2_XXS", 1, {}, imatrix); });
  EXPECT_NE(
      msg.find("importance matrix entry 'blk.0.ffn_down.weight' has 512 values, the tensor has 256 columns"),
      std::string::npos)
      << msg;
  std::filesystem::remove(out);
  std::filesystem::remove(tiny);
}

// An expert stack takes its expert's importance row (llama-imatrix keeps one per expert): a row of
// expert 3 is quantized with the fourth row of the tensor's entry, byte for byte.
TEST(Quantize, ExpertsUseTheirOwnImportanceRows) {
  const std::string f32 = test::unxz("models/qwen3moe/gguf/qwen3moe-F32.gguf");
  auto src = gguf::File::open(f32);
  gguf::Writer im;
  std::vector<std::vector<float>> data;
  for (const TensorView& t : src->tensors()) {
    if (!quantizable(t) || t.name == "token_embd.weight" || t.name == "output.weight") continue;
    const int64_t cols = t.ne[0], mats = t.ne[2];
    data.emplace_back(static_cast<size_t>(cols * mats));
    for (int64_t i = 0; i < cols * mats; ++i) data.back()[i] = 1.0f + static_cast<float>((i * 7919) % 97);
    im.add_tensor(t.name + ".in_sum2", DType::F32, {cols, mats}, data.back().data(), data.back().size() * 4);
    data.emplace_back(static_cast<size_t>(mats), 2.0f);
    im.add_tensor(t.name + ".counts", DType::F32, {1, mats}, data.back().data(), data.back().size() * 4);
  }
  const std::string im_path = test::temp_dir() + "/qwen3moe-imatrix.gguf";
  im.write(im_path);
  const std::string out = test::temp_dir() + "/qwen3moe-IQ2_XXS.gguf";
  quantize_model(f32, out, "IQ2_XXS", 2, {}, im_path);
  auto f = gguf::File::open(out);
  const TensorView& q = f->tensor("blk.0.ffn_gate_exps.weight");
  ASSERT_EQ(q.type, DType::IQ2_XXS);
  const TensorView& s = src->tensor("blk.0.ffn_gate_exps.weight");
  const ImportanceMatrix m = read_imatrix(im_path);
  const float* w = m.find(s.name, s.ne[0], s.ne[2]);
  const int64_t row = 3 * s.ne[1] + 5;  // expert 3, row 5
  std::vector<float> x(s.ne[0]);
  dequantize_row(s.type, s.row(row), x.data(), s.ne[0]);
  std::vector<uint8_t> mine(q.row_bytes()), other(q.row_bytes());
  quantize_row(DType::IQ2_XXS, x.data(), mine.data(), s.ne[0], w + 3 * s.ne[0]);
  quantize_row(DType::IQ2_XXS, x.data(), other.data(), s.ne[0], w);
  EXPECT_EQ(std::memcmp(q.row(row), mine.data(), mine.size()), 0);
  EXPECT_NE(std::memcmp(q.row(row), other.data(), other.size()), 0);  // expert 0's row would differ
  // The model runs.
  auto model = test::open_model(out, Precision::Fast);
  auto ids = test::prompt_ids("qwen3moe", "p3");
  EXPECT_EQ(test::all_logits(*model, ids).size(), ids.size() * model->config().n_vocab);
  std::filesystem::remove(out);
  std::filesystem::remove(im_path);
}

// MXFP4_MOE (llama-quantize's preset for gpt-oss-style files): the MoE fixture's expert stacks in
// MXFP4, every other matrix Q8_0; the model runs in both precisions, as near the F32 model as
// llama-quantize's Q4_0 file of it (4.5 bits per weight against MXFP4's 4.25).
TEST(Quantize, Mxfp4MoePreset) {
  const std::string f32 = test::unxz("models/qwen3moe/gguf/qwen3moe-F32.gguf");
  const std::string out = test::temp_dir() + "/qwen3moe-MXFP4_MOE.gguf";
  quantize_model(f32, out, "MXFP4_MOE", 2);
  auto f = gguf::File::open(out);
  int experts = 0;
  for (const TensorView& t : f->tensors()) {
    if (!quantizable(t)) continue;
    const bool stack = t.n_dims >= 3 && t.ne[2] > 1;
    EXPECT_EQ(t.type, stack ? DType::MXFP4 : DType::Q8_0) << t.name;
    experts += stack;
  }
  EXPECT_GT(experts, 0);
  EXPECT_EQ(f->find_uint("general.file_type").value_or(0), 38u);
  auto ids = test::prompt_ids("qwen3moe", "p3");
  auto ref = test::load_npy(test::model_file("qwen3moe", "logits/F32/p3.npy"));
  auto distance = [&](const std::string& path, Precision p) {
    auto model = test::open_model(path, p);
    return test::compare(test::all_logits(*model, ids), ref.data, ids.size(), model->config().n_vocab)
        .mean_abs;
  };
  const double q4_0 = distance(test::model_file("qwen3moe", "gguf/qwen3moe-Q4_0.gguf"), Precision::Exact);
  for (Precision p : {Precision::Exact, Precision::Fast}) {
    const double d = distance(out, p);
    std::printf("  MXFP4_MOE %s mean |logit - F32| %.4f (Q4_0 file %.4f)\n",
                p == Precision::Exact ? "exact" : "fast", d, q4_0);
    EXPECT_LT(d, 1.25 * q4_0);
    EXPECT_GT(d, 0.0);
  }
}

}  // namespace
}  // namespace ferrum
