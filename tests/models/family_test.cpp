// The newer families (tests/data/families, made by make_family_fixtures.py): the Hugging Face
// directory against a float64 forward of its weights; the GGUF ferrum converts it to against
// llama.cpp's logits on that file; Q8_0 and Q4_K_M made by `ferrum quantize` against a float64
// forward over their dequantized weights (exact path) and as close as llama.cpp's fast path (top-1).
#include <gtest/gtest.h>

#include <algorithm>

#include "formats/convert_hf.h"
#include "model_test_util.h"
#include "models/quantize.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

class Family : public ::testing::TestWithParam<std::string> {
 protected:
  std::string f() const { return GetParam(); }
  Npy logits(const std::string& name) const {
    return load_npy(unxz("families/" + f() + "/logits/" + name + ".npy"));
  }
  std::vector<int32_t> ids() const { return reference()["prompt"]["token_ids"].get<std::vector<int32_t>>(); }
  std::string hf() const { return data_dir("families/" + f() + "/hf"); }
  nlohmann::json reference() const { return load_json(data_path("families/" + f() + "/reference.json")); }
  // Whether llama.cpp ran the files (not for mistral: llama.cpp's llama architecture has no window).
  bool llama_cpp_ran() const { return reference().value("llama_cpp_runs", true); }
  // The directory converted to GGUF (F32) and quantized to `type`.
  std::string gguf(const std::string& type) const { return family_gguf(f(), type); }
  std::vector<float> run(const std::string& path, Precision p) const {
    auto m = open_model(path, p);
    return all_logits(*m, ids());
  }
};

TEST_P(Family, HfDirectoryMatchesFloat64Forward) {
  const Npy ref = logits("exact-F32-p3");
  const Diff d = compare(run(hf(), Precision::Exact), ref.data, ref.shape[0], ref.shape[1]);
  std::printf("%s HF exact: max %.3g\n", f().c_str(), d.max_abs);
  EXPECT_LE(d.max_abs, 1e-4);
  EXPECT_EQ(d.argmax_agree, d.rows);
}

// llama.cpp ran the GGUF ferrum writes (its logits agree with the float64 forward: the generator
// checks it), and ferrum reads it back to the same numbers.
TEST_P(Family, ConvertedGgufMatchesLlamaCpp) {
  const Npy exact = logits("exact-F32-p3");
  const std::vector<float> got = run(gguf("F32"), Precision::Exact);
  if (!llama_cpp_ran()) {  // the float64 forward only
    const Diff e = compare(got, exact.data, exact.shape[0], exact.shape[1]);
    std::printf("%s GGUF F32 exact vs float64 %.3g (llama.cpp does not run this family)\n", f().c_str(),
                e.max_abs);
    EXPECT_LE(e.max_abs, 1e-4);
    return;
  }
  const Npy ref = logits("llamacpp-F32-p3");
  const Diff d = compare(got, ref.data, ref.shape[0], ref.shape[1]);
  const Diff e = compare(got, exact.data, ref.shape[0], ref.shape[1]);
  // llama.cpp's own distance from the float64 forward (Gemma: its GELU is an F16 table).
  const double theirs = reference()["distances"]["llamacpp_F32_vs_exact_max"].get<double>();
  std::printf("%s GGUF F32 exact: vs llama.cpp %.3g (llama.cpp vs float64 %.3g), vs float64 %.3g\n",
              f().c_str(), d.max_abs, theirs, e.max_abs);
  EXPECT_LE(d.max_abs, std::max(1e-4, 1.25 * theirs));
  EXPECT_LE(e.max_abs, 1e-4);
  EXPECT_EQ(d.argmax_agree, d.rows);
}

TEST_P(Family, QuantizedExactAndFastPaths) {
  for (const std::string type : {"Q8_0", "Q4_K_M"}) {
    const std::string path = gguf(type);
    const Npy exact = logits("exact-" + type + "-p3");
    const int64_t T = exact.shape[0], V = exact.shape[1];
    const Diff e = compare(run(path, Precision::Exact), exact.data, T, V);
    EXPECT_LE(e.max_abs, 1e-3) << type;
    if (!llama_cpp_ran()) continue;
    const Npy lc = logits("llamacpp-" + type + "-p3");
    // Fast path: as far from the exact logits as llama.cpp's, and its top-1 agreement at least theirs.
    const std::vector<float> fast = run(path, Precision::Fast);
    const Diff ours = compare(fast, exact.data, T, V), theirs = compare(lc.data, exact.data, T, V);
    std::printf(
        "%s %s: exact path max %.3g; fast vs exact mean %.4f top-1 %lld, llama.cpp mean %.4f top-1 %lld of "
        "%lld\n",
        f().c_str(), type.c_str(), e.max_abs, ours.mean_abs, static_cast<long long>(ours.argmax_agree),
        theirs.mean_abs, static_cast<long long>(theirs.argmax_agree), static_cast<long long>(T));
    EXPECT_LE(ours.mean_abs, 1.25 * theirs.mean_abs) << type;
    EXPECT_GE(ours.argmax_agree, theirs.argmax_agree) << type;
  }
}

// More prompts, each with the KV capacity llama.cpp ran it with (Phi-3's LongRoPE factors follow it:
// short within the original context, long beyond), on the HF directory and the converted GGUF.
TEST_P(Family, PromptsAtTheirContextSize) {
  const auto ref = reference();
  for (const auto& p : ref["extra_prompts"]) {
    const std::string id = p["id"];
    const auto ids = p["token_ids"].get<std::vector<int32_t>>();
    const int64_t ctx = p["context"].get<int64_t>();
    const Npy exact = logits("exact-F32-" + id), lc = logits("llamacpp-F32-" + id);
    const int64_t rows = exact.shape[0], V = exact.shape[1];
    auto tail = [&](const std::string& path) {  // the positions the references keep (the last `rows`)
      auto m = open_model(path, Precision::Exact, 2, kReferenceKvType, ctx);
      std::vector<float> all = all_logits(*m, ids);
      return std::vector<float>(all.end() - rows * V, all.end());
    };
    const Diff h = compare(tail(hf()), exact.data, rows, V), g = compare(tail(gguf("F32")), lc.data, rows, V);
    std::printf("%s %s (%zu tokens, context %lld): HF vs float64 %.3g, GGUF vs llama.cpp %.3g\n", f().c_str(),
                id.c_str(), ids.size(), static_cast<long long>(ctx), h.max_abs, g.max_abs);
    EXPECT_LE(h.max_abs, 1e-4) << id;
    EXPECT_LE(g.max_abs, 1e-4) << id;
  }
}

// llama.cpp's greedy text on the same file (llama-simple, make_greedy_fixtures.sh), token for token: the
// exact path over the prefill and 23 decode steps (mistral has none: llama.cpp ignores its window).
TEST_P(Family, GreedyTextEqualsLlamaCpp) {
  const auto [got, want] = greedy_text_vs_llamacpp(f(), ids());
  if (want.empty()) GTEST_SKIP() << "no llama.cpp greedy text for " << f();
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Families, Family,
                         ::testing::Values("smollm3", "phi3", "gemma2", "gemma3", "mistral"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ferrum::test
