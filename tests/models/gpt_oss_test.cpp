// gpt-oss (tests/data/families/gpt-oss, made by make_gpt_oss_fixture.py): a tiny random-weight model
// with MXFP4 experts, attention sinks, alternating 16-token windows, biases, YaRN and the clamped
// SwiGLU. The Hugging Face directory against a float64 forward of its weights (YaRN as transformers
// computes it, truncate false); the GGUF ferrum converts it to against llama.cpp's logits on that file
// and a float64 forward with llama.cpp's YaRN ramp; the o200k pre-tokenizer against llama.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "ferrum/loader.h"
#include "model_test_util.h"
#include "models/moe.h"
#include "test_util.h"

namespace ferrum::test::gpt_oss_test {
namespace {

constexpr const char* kFamily = "gpt-oss";

Npy logits(const std::string& name) {
  return load_npy(unxz(std::string("families/") + kFamily + "/logits/" + name + ".npy"));
}
nlohmann::json reference() {
  return load_json(data_path(std::string("families/") + kFamily + "/reference.json"));
}
std::vector<int32_t> ids() {
  return reference()["prompt"]["token_ids"].get<std::vector<int32_t>>();
}
std::string hf() {
  return data_dir(std::string("families/") + kFamily + "/hf");
}
std::vector<float> run(const std::string& path, Precision p) {
  auto m = open_model(path, p);
  return all_logits(*m, ids());
}

TEST(GptOss, HfDirectoryMatchesFloat64Forward) {
  const Npy ref = logits("exact-hf-p3");
  const Diff d = compare(run(hf(), Precision::Exact), ref.data, ref.shape[0], ref.shape[1]);
  std::printf("gpt-oss HF exact: max %.3g\n", d.max_abs);
  EXPECT_LE(d.max_abs, 1e-4);
  EXPECT_EQ(d.argmax_agree, d.rows);
  // The two YaRN ramps differ by more than the tolerance, so the test tells them apart.
  EXPECT_GT(reference()["distances"]["exact_hf_vs_exact_gguf_max"].get<double>(), 1e-3);
}

// The HF directory's MXFP4 experts are rewritten at load into GGUF's block layout; once a stack is
// packed that copy is freed (else a 20B directory held its experts twice, ~24 GiB), and the fast path
// still gives the float64 forward's answer (within the Q8_0 rounding of the activations).
TEST(GptOss, PackedExpertStacksFreeTheirRewrittenCopy) {
  if (!kernels::packed_kernels_active() || !kernels::packed_kernel_for(DType::MXFP4))
    GTEST_SKIP() << "no packed MXFP4 kernel on this tier";
  HfModel hm = load_hf_dir(hf());
  const std::string g = "blk.0.ffn_gate_exps.weight", u = "blk.0.ffn_up_exps.weight",
                    d = "blk.0.ffn_down_exps.weight";
  const size_t stacks = hm.weights.get(g).nbytes + hm.weights.get(u).nbytes + hm.weights.get(d).nbytes;
  const size_t before = hm.weights.owned_bytes();
  ThreadPool pool(1);
  MoeFeedForward ffn(hm.config, hm.weights, 0, kernels::Precision::Fast, kernels::WeightRounding::None, pool);
  EXPECT_EQ(hm.weights.owned_bytes(), before - stacks);
  EXPECT_EQ(hm.weights.get(g).data, nullptr);
  EXPECT_NE(hm.weights.get("blk.0.ffn_gate_exps.bias").data, nullptr);  // biases are not packed

  const Npy ref = logits("exact-hf-p3");
  const Diff f = compare(run(hf(), Precision::Fast), ref.data, ref.shape[0], ref.shape[1]);
  std::printf("gpt-oss HF fast (experts packed, rewritten copies freed): max %.3g mean %.3g\n", f.max_abs,
              f.mean_abs);
  EXPECT_LE(f.mean_abs, 0.05);
}

// llama.cpp ran the GGUF ferrum writes, and ferrum reads it back to the same numbers: the exact path
// as the float64 forward (llama.cpp's YaRN ramp), the fast path, which multiplies MXFP4 by activations
// rounded to Q8_0 as llama.cpp does, as llama.cpp (0.02 from the float64 forward on average, a logit
// where the rounding changes a token's experts). The fast path's F32 products sum in the tier's lane
// order: on AVX2 and scalar it lands within 1e-6 of llama.cpp, while AVX-512's 16-lane sums move one
// activation across a Q8_0 rounding boundary (0.04 on one logit, 1e-3 on average); anything not
// rounding llama.cpp's way (F32 activations for MXFP4: 0.02 on average) fails the mean.
TEST(GptOss, ConvertedGgufMatchesLlamaCpp) {
  const std::string gguf = family_gguf(kFamily, "F32");
  const Npy exact = logits("exact-gguf-p3"), lc = logits("llamacpp-gguf-p3");
  const int64_t T = exact.shape[0], V = exact.shape[1];
  const Diff e = compare(run(gguf, Precision::Exact), exact.data, T, V);
  const Diff f = compare(run(gguf, Precision::Fast), lc.data, T, V);
  std::printf("gpt-oss GGUF: exact path vs float64 %.3g, fast path vs llama.cpp max %.3g mean %.3g\n",
              e.max_abs, f.max_abs, f.mean_abs);
  EXPECT_LE(e.max_abs, 1e-4);
  EXPECT_EQ(e.argmax_agree, T);
  EXPECT_LE(f.max_abs, 0.1);
  EXPECT_LE(f.mean_abs, 4e-3);
  EXPECT_EQ(f.argmax_agree, T);
}

// llama.cpp's greedy text on the converted file (llama-simple, make_greedy_fixtures.sh), token for token
// (the exact path: the fast path's Q8_0 rounding of other sums may pick another token on this
// random-weight model).
TEST(GptOss, GreedyTextEqualsLlamaCpp) {
  const auto [got, want] = greedy_text_vs_llamacpp(kFamily, ids());
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}

// The o200k pattern (tokenizer.json's, and llama.cpp's "gpt-4o" pre-tokenizer in the GGUF) splits the
// prompt as llama.cpp did.
TEST(GptOss, O200kPreTokenizerMatchesLlamaCpp) {
  const std::string text = reference()["prompt"]["text"];
  for (const std::string& path : {hf(), family_gguf(kFamily, "F32")}) {
    const auto tok = load_tokenizer(path);
    EXPECT_EQ(tok->encode(text, true, false), ids()) << path;
  }
}

TEST(GptOss, TopKThenSoftmaxRouting) {
  const float logits[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  int32_t id[3];
  float w[3];
  moe_select_topk_softmax(logits, 5, 3, id, w);
  EXPECT_EQ(id[0], 1);  // a tie goes to the smaller index
  EXPECT_EQ(id[1], 3);
  EXPECT_EQ(id[2], 4);
  const double z = 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(w[2], std::exp(1.0) / z, 1e-6);
}

// A copy of the fixture directory with one tensor's header entry changed by `edit`.
std::string edited_copy(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  namespace fs = std::filesystem;
  const std::string dir = temp_dir() + "/gpt-oss-edited";
  fs::remove_all(dir);
  fs::copy(hf(), dir, fs::copy_options::recursive);
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  uint64_t n = 0;
  std::memcpy(&n, all.data(), 8);
  nlohmann::json h = nlohmann::json::parse(all.substr(8, n));
  edit(h[name]);
  std::string hs = h.dump();
  hs.resize(n, ' ');  // same length: the data offsets stay valid
  std::ofstream out(dir + "/model.safetensors", std::ios::binary | std::ios::trunc);
  out.write(all.data(), 8);
  out.write(hs.data(), static_cast<std::streamsize>(hs.size()));
  out.write(all.data() + 8 + n, static_cast<std::streamsize>(all.size() - 8 - n));
  return dir;
}

TEST(GptOss, MisshapenExpertBlocksAreNamed) {
  const std::string t = "model.layers.1.mlp.experts.down_proj_scales";
  const std::string dir = edited_copy(t, [](nlohmann::json& e) { e["dtype"] = "I8"; });  // unsupported
  try {
    open_model(dir, Precision::Exact);
    FAIL() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << e.what();
  }
  const std::string dir2 = edited_copy(t, [](nlohmann::json& e) {
    auto s = e["shape"];
    std::swap(s[0], s[1]);  // [E, rows, blocks] -> [rows, E, blocks]
    e["shape"] = s;
  });
  try {
    open_model(dir2, Precision::Exact);
    FAIL() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected U8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferrum::test::gpt_oss_test
