// LoRA adapters (ferrum/lora.h) against float64 references of the same models with the adapters
// merged into their weights (tests/data/lora/make_lora.py: numpy, W + scale * B @ A), in both file
// forms, on GGUF and Hugging Face bases, F32 and quantized; a batch mixing adapters equals each
// sequence alone, bit for bit; and adapters that do not fit the model are refused naming the tensor.
#include "ferrum/lora.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "ferrum/error.h"
#include "model_test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test::lora_test {
namespace {

constexpr int64_t kTokens = 16;  // the references cover p3's first 16 tokens

std::vector<int32_t> ref_ids(const std::string& m) {
  auto p = prompt_ids(m, "p3");
  p.resize(kTokens);
  return p;
}

std::string lora_path(const std::string& rel) {
  return data_path("lora/" + rel);
}

std::shared_ptr<const LoraAdapter> load(const Model& m, std::vector<LoraSpec> specs) {
  return load_lora(m, specs);
}

// All-position logits of `ids` as one prefill with `lora` (null: the base model).
std::vector<float> logits_with(CachedModel& m, const LoraAdapter* lora, const std::vector<int32_t>& ids) {
  std::vector<float> out(ids.size() * m.config().n_vocab);
  m.reset();
  SeqInput in = seq_input(0, ids, Want::All);
  in.lora = lora;
  m.forward(std::span(&in, 1), out.data());
  m.reset();
  return out;
}

struct Dist {
  double max_abs = 0, mean_abs = 0;
};
Dist distance(const std::vector<float>& got, const std::vector<float>& want) {
  Dist d;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]);
    d.max_abs = std::max(d.max_abs, e);
    d.mean_abs += e / want.size();
  }
  return d;
}

std::vector<float> reference(const std::string& rel) {
  Npy r = load_npy(lora_path(rel));
  return r.data;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// --- against the merged float64 reference --------------------------------------------------

class LoraMerged : public ::testing::TestWithParam<std::string> {
 protected:
  std::string m() const { return GetParam(); }
  // F32 weights, activations in F32 (both precisions keep F32 activations for F32 weights):
  // the F32 fixture tolerance (README of tests/data) holds with the adapter too.
  void expect_matches(const std::string& base, const std::string& adapter, Precision prec) {
    auto model = open_model(base, prec);
    auto lora = load(*model->model, {{lora_path(adapter), 1.0f}});
    const auto want = reference(m() + "/ref_a.npy");
    const Dist d = distance(logits_with(*model, lora.get(), ref_ids(m())), want);
    EXPECT_LE(d.max_abs, 1e-4) << base << " + " << adapter;
    // The adapter moves the logits far more than that: the test sees it.
    EXPECT_GT(distance(logits_with(*model, nullptr, ref_ids(m())), want).max_abs, 0.5);
  }
};

TEST_P(LoraMerged, PeftAdapterOnGgufBase) {
  // For llama the adapter's Q/K rows are permuted to the GGUF base's order at load.
  expect_matches(model_file(m(), "gguf/" + m() + "-F32.gguf"), m() + "-a", Precision::Exact);
  expect_matches(model_file(m(), "gguf/" + m() + "-F32.gguf"), m() + "-a", Precision::Fast);
}

TEST_P(LoraMerged, GgufAdapterOnGgufBase) {
  expect_matches(model_file(m(), "gguf/" + m() + "-F32.gguf"), m() + "-a.gguf", Precision::Exact);
}

TEST_P(LoraMerged, PeftAdapterOnHuggingFaceBase) {
  expect_matches(hf_dir(m(), "hf"), m() + "-a", Precision::Exact);
}

TEST_P(LoraMerged, GgufAdapterOnHuggingFaceBase) {
  // For llama the GGUF adapter's permuted Q/K rows are put back in the HF order.
  expect_matches(hf_dir(m(), "hf"), m() + "-a.gguf", Precision::Exact);
}

// The two forms hold the same numbers: on one base they give the same logits, bit for bit.
TEST_P(LoraMerged, PeftAndGgufFormsGiveTheSameLogits) {
  auto model = open_model(model_file(m(), "gguf/" + m() + "-Q8_0.gguf"), Precision::Fast);
  auto peft = load(*model->model, {{lora_path(m() + "-a"), 1.0f}});
  auto gguf = load(*model->model, {{lora_path(m() + "-a.gguf"), 1.0f}});
  EXPECT_TRUE(bitwise_equal(logits_with(*model, peft.get(), ref_ids(m())),
                            logits_with(*model, gguf.get(), ref_ids(m()))));
}

INSTANTIATE_TEST_SUITE_P(Families, LoraMerged, ::testing::Values("llama", "qwen2", "qwen3"));

// Three adapters summed with user scales (F32, F16 with rsLoRA, BF16), against base + 0.5 a + b + c.
TEST(Lora, SummedAdaptersWithScales) {
  auto model = open_model(model_file("llama", "gguf/llama-F32.gguf"), Precision::Exact);
  auto sum = load(*model->model,
                  {parse_lora_spec(lora_path("llama-a") + ":0.5"), parse_lora_spec(lora_path("llama-b")),
                   parse_lora_spec(lora_path("llama-c") + ":1")});
  const Dist d = distance(logits_with(*model, sum.get(), ref_ids("llama")), reference("llama/ref_sum.npy"));
  EXPECT_LE(d.max_abs, 1e-4);
  // rescale_lora(a, 2) of a:0.5 is a:1.
  auto half = load(*model->model, {{lora_path("llama-a"), 0.5f}});
  const Dist d2 = distance(logits_with(*model, rescale_lora(half, 2.0f).get(), ref_ids("llama")),
                           reference("llama/ref_a.npy"));
  EXPECT_LE(d2.max_abs, 1e-4);
  EXPECT_GT(lora_bytes(*sum), 0u);
  EXPECT_EQ(lora_name(*sum), "llama-a:0.5+llama-b+llama-c");
}

// A quantized base: Q8_0 against the merged reference over its own dequantized weights (exact
// path: the quantized-file tolerance 1e-3; fast path: Q8 activations, within llama.cpp's own
// distance from the exact forward, 0.32 for this file, with margin); Q4_K_M against the F32 merged
// reference within the stated Q4_K_M-vs-F32 spread (max 4.45, mean 0.65, TOLERANCES.md).
TEST(Lora, QuantizedBases) {
  const auto ids = ref_ids("llama");
  {
    auto exact = open_model(model_file("llama", "gguf/llama-Q8_0.gguf"), Precision::Exact);
    auto a = load(*exact->model, {{lora_path("llama-a"), 1.0f}});
    EXPECT_LE(distance(logits_with(*exact, a.get(), ids), reference("llama/ref_a_q8_0.npy")).max_abs, 1e-3);
    auto fast = open_model(model_file("llama", "gguf/llama-Q8_0.gguf"), Precision::Fast);
    auto af = load(*fast->model, {{lora_path("llama-a"), 1.0f}});
    const Dist d = distance(logits_with(*fast, af.get(), ids), reference("llama/ref_a_q8_0.npy"));
    EXPECT_LE(d.max_abs, 0.5);
    EXPECT_LE(d.mean_abs, 0.1);
  }
  auto q4 = open_model(model_file("llama", "gguf/llama-Q4_K_M.gguf"), Precision::Fast);
  auto a = load(*q4->model, {{lora_path("llama-a"), 1.0f}});
  const auto want = reference("llama/ref_a.npy");
  const Dist with = distance(logits_with(*q4, a.get(), ids), want);
  EXPECT_LE(with.max_abs, 4.45);
  EXPECT_LE(with.mean_abs, 0.65);
  // Without the adapter the same base is well outside that: the adapter is what brings it there.
  EXPECT_GT(distance(logits_with(*q4, nullptr, ids), want).mean_abs, 2 * with.mean_abs);
}

// --- batching --------------------------------------------------------------------------------

// Four sequences (adapters a, b, c and none) prefilled and decoded together, against each run
// alone: bit for bit, including the one without an adapter against the plain model.
TEST(Lora, MixedBatchEqualsEachSequenceAlone) {
  auto m = open_model(model_file("llama", "gguf/llama-Q4_K_M.gguf"), Precision::Fast);
  const int64_t V = m->config().n_vocab;
  std::vector<std::shared_ptr<const LoraAdapter>> ad = {
      load(*m->model, {{lora_path("llama-a"), 1.0f}}), load(*m->model, {{lora_path("llama-b"), 1.0f}}),
      load(*m->model, {{lora_path("llama-c"), 0.7f}}), nullptr};
  const auto p = prompt_ids("llama", "p3");
  const int n = 4, steps = 3;
  // Each sequence: a prompt of its own length, then `steps` decode tokens (fixed ids).
  auto prompt_of = [&](int s) { return std::vector<int32_t>(p.begin() + s, p.begin() + 9 + 5 * s); };
  auto token_of = [&](int s, int step) { return p[20 + 3 * s + step]; };
  // Alone: logits of the prompt's last position and of every decode step.
  std::vector<std::vector<float>> alone(n);
  for (int s = 0; s < n; ++s) {
    m->reset();
    const auto pr = prompt_of(s);
    std::vector<float> row(V);
    SeqInput in = seq_input(s, pr);
    in.lora = ad[s].get();
    m->forward(std::span(&in, 1), row.data());
    alone[s] = row;
    for (int k = 0; k < steps; ++k) {
      const int32_t t = token_of(s, k);
      SeqInput d = seq_input(s, std::span(&t, 1));
      d.lora = ad[s].get();
      m->forward(std::span(&d, 1), row.data());
      alone[s].insert(alone[s].end(), row.begin(), row.end());
    }
  }
  // Together: all prompts in one batch, then every decode step in one batch (reversed order).
  m->reset();
  std::vector<std::vector<float>> together(n);
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < n; ++s) prompts.push_back(prompt_of(s));
  std::vector<SeqInput> batch;
  for (int s = 0; s < n; ++s) {
    batch.push_back(seq_input(s, prompts[s]));
    batch.back().lora = ad[s].get();
  }
  std::vector<float> rows(n * V);
  m->forward(batch, rows.data());
  for (int s = 0; s < n; ++s) together[s].assign(rows.begin() + s * V, rows.begin() + (s + 1) * V);
  std::vector<int32_t> toks(n);
  for (int k = 0; k < steps; ++k) {
    batch.clear();
    for (int s = n - 1; s >= 0; --s) {
      toks[s] = token_of(s, k);
      batch.push_back(seq_input(s, std::span(&toks[s], 1)));
      batch.back().lora = ad[s].get();
    }
    m->forward(batch, rows.data());
    for (int i = 0; i < n; ++i) {
      const int s = n - 1 - i;
      together[s].insert(together[s].end(), rows.begin() + i * V, rows.begin() + (i + 1) * V);
    }
  }
  for (int s = 0; s < n; ++s) EXPECT_TRUE(bitwise_equal(alone[s], together[s])) << "sequence " << s;
  // And the adapters did change something.
  EXPECT_FALSE(bitwise_equal(alone[0], alone[3]));
  EXPECT_FALSE(bitwise_equal(alone[1], alone[2]));
}

// The prefix cache shares a prompt's blocks only between sequences with the same adapter: a
// sequence without it (or with another) computes its own; one with it reuses them and gets the
// same logits bitwise. A sequence cannot switch adapters half-way.
TEST(Lora, PrefixCacheIsKeptPerAdapter) {
  ModelFiles files = open_model_files(model_file("llama", "gguf/llama-Q8_0.gguf"));
  ModelOptions o;
  o.n_threads = 2;
  CachedModel m(create_model(std::move(files.config), std::move(files.weights), o),
                KvOptions{KvLayout::Paged, std::nullopt, 256, 0, true});
  auto a = load(*m.model, {{lora_path("llama-a"), 1.0f}});
  const auto p = prompt_ids("llama", "p3");
  const int64_t V = m.config().n_vocab;
  std::vector<float> first(V), again(V), base(V), fresh(V);
  m.model->prefill(*m.kv, 0, p, first.data(), false, a.get());
  m.release(0);
  EXPECT_EQ(m.reuse_prefix(1, p), 0);  // the base model: nothing cached for it
  m.model->prefill(*m.kv, 1, p, base.data());
  EXPECT_GT(m.kv->reuse_prefix(2, p, lora_id(*a)), 0);
  m.model->prefill(*m.kv, 2, std::span(p).subspan(m.seq_len(2)), again.data(), false, a.get());
  EXPECT_TRUE(bitwise_equal(first, again));
  EXPECT_FALSE(bitwise_equal(first, base));
  // rescale_lora makes another adapter (another namespace).
  auto a2 = rescale_lora(a, 1.0f);
  EXPECT_EQ(m.kv->reuse_prefix(3, p, lora_id(*a2)), 0);
  // Switching adapters within a sequence is refused, and changes nothing.
  const int32_t t = p[0];
  SeqInput in = seq_input(2, std::span(&t, 1));
  in.lora = a2.get();
  const int64_t len = m.seq_len(2);
  EXPECT_NE(error_of([&] { m.forward(std::span(&in, 1), fresh.data()); }).find("another LoRA adapter"),
            std::string::npos);
  EXPECT_EQ(m.seq_len(2), len);
}

// --- errors ------------------------------------------------------------------------------------

// A PEFT directory holding the given tensors (F32, shape [rows, cols]: the values given, or zeros)
// and config.
struct StTensor {
  std::string name;
  std::array<int64_t, 2> shape;
  std::vector<float> data = {};
};
std::string write_peft(const std::string& name, const std::vector<StTensor>& ts,
                       nlohmann::json cfg = {{"r", 4}, {"lora_alpha", 8}}) {
  const fs::path dir = fs::path(temp_dir()) / name;
  fs::create_directories(dir);
  std::ofstream(dir / "adapter_config.json") << cfg.dump();
  nlohmann::json header = nlohmann::json::object();
  std::string payload;
  for (const StTensor& t : ts) {
    const size_t bytes = t.shape[0] * t.shape[1] * 4;
    header[t.name] = {{"dtype", "F32"},
                      {"shape", {t.shape[0], t.shape[1]}},
                      {"data_offsets", {payload.size(), payload.size() + bytes}}};
    std::string d(bytes, '\0');
    if (!t.data.empty()) std::memcpy(d.data(), t.data.data(), std::min(bytes, t.data.size() * 4));
    payload += d;
  }
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8, ' ');
  std::ofstream f(dir / "adapter_model.safetensors", std::ios::binary);
  const uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << h << payload;
  return dir.string();
}

// An adapter on fused modules (qkv_proj, gate_up_proj: one A, B rows of q|k|v or gate|up) equals
// the same numbers as separate targets sharing that A, on a GGUF base (Q/K rows permuted, the
// fused B split into its q and k parts for that) and on a Hugging Face base.
TEST(Lora, FusedTargetsEqualTheirSplitForm) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  auto rnd = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
  };
  const int64_t d = 256, qd = 256, kvd = 128, ff = 512, r = 4;
  std::vector<StTensor> fused, split;
  for (int l = 0; l < 2; ++l) {
    const std::string p = "base_model.model.model.layers." + std::to_string(l) + ".";
    const auto a_qkv = rnd(r * d), b_qkv = rnd((qd + 2 * kvd) * r), a_gu = rnd(r * d), b_gu = rnd(2 * ff * r);
    fused.push_back({p + "self_attn.qkv_proj.lora_A.weight", {r, d}, a_qkv});
    fused.push_back({p + "self_attn.qkv_proj.lora_B.weight", {qd + 2 * kvd, r}, b_qkv});
    fused.push_back({p + "mlp.gate_up_proj.lora_A.weight", {r, d}, a_gu});
    fused.push_back({p + "mlp.gate_up_proj.lora_B.weight", {2 * ff, r}, b_gu});
    auto rows = [&](const std::vector<float>& b, int64_t r0, int64_t n) {
      return std::vector<float>(b.begin() + r0 * r, b.begin() + (r0 + n) * r);
    };
    const std::pair<const char*, std::array<int64_t, 2>> parts[] = {{"self_attn.q_proj", {0, qd}},
                                                                    {"self_attn.k_proj", {qd, kvd}},
                                                                    {"self_attn.v_proj", {qd + kvd, kvd}}};
    for (const auto& [m, rr] : parts) {
      split.push_back({p + m + ".lora_A.weight", {r, d}, a_qkv});
      split.push_back({p + m + ".lora_B.weight", {rr[1], r}, rows(b_qkv, rr[0], rr[1])});
    }
    split.push_back({p + "mlp.gate_proj.lora_A.weight", {r, d}, a_gu});
    split.push_back({p + "mlp.gate_proj.lora_B.weight", {ff, r}, rows(b_gu, 0, ff)});
    split.push_back({p + "mlp.up_proj.lora_A.weight", {r, d}, a_gu});
    split.push_back({p + "mlp.up_proj.lora_B.weight", {ff, r}, rows(b_gu, ff, ff)});
  }
  const std::string fdir = write_peft("fused", fused), sdir = write_peft("split", split);
  for (const std::string& base : {model_file("llama", "gguf/llama-F32.gguf"), hf_dir("llama", "hf")}) {
    auto m = open_model(base, Precision::Exact);
    auto f = load(*m->model, {{fdir, 1.0f}}), s = load(*m->model, {{sdir, 1.0f}});
    const auto ids = ref_ids("llama");
    const auto lf = logits_with(*m, f.get(), ids), ls = logits_with(*m, s.get(), ids);
    EXPECT_LE(distance(lf, ls).max_abs, 1e-5) << base;
    EXPECT_GT(distance(lf, logits_with(*m, nullptr, ids)).max_abs, 0.1) << base;
  }
}

class LoraErrors : public ::testing::Test {
 protected:
  void SetUp() override { m_ = open_model(model_file("llama", "gguf/llama-Q8_0.gguf"), Precision::Fast); }
  std::string error(const std::string& path) {
    return error_of([&] { load(*m_->model, {{path, 1.0f}}); });
  }
  std::unique_ptr<CachedModel> m_;
  const std::string q = "base_model.model.model.layers.0.self_attn.q_proj.";
};

TEST_F(LoraErrors, WrongShapeNamesTheTensor) {
  const std::string e =
      error(write_peft("shape", {{q + "lora_A.weight", {4, 200}}, {q + "lora_B.weight", {256, 4}}}));
  EXPECT_NE(e.find(q + "lora_A.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("attn_q"), std::string::npos) << e;
  const std::string down = "base_model.model.model.layers.1.mlp.down_proj.";
  const std::string e2 =
      error(write_peft("shape2", {{down + "lora_A.weight", {4, 512}}, {down + "lora_B.weight", {255, 4}}}));
  EXPECT_NE(e2.find(down + "lora_A.weight"), std::string::npos) << e2;
}

TEST_F(LoraErrors, UnknownTargetLayerOrMissingHalf) {
  const std::string lm = "base_model.model.lm_head.lora_A.weight";
  EXPECT_NE(error(write_peft("head", {{lm, {4, 256}}})).find(lm), std::string::npos);
  const std::string rot = "base_model.model.model.layers.0.self_attn.rotary_emb.lora_A.weight";
  const std::string e = error(write_peft("rot", {{rot, {4, 256}}}));
  EXPECT_NE(e.find("rotary_emb"), std::string::npos) << e;
  const std::string l9 = "base_model.model.model.layers.9.self_attn.q_proj.";
  const std::string e9 =
      error(write_peft("layer", {{l9 + "lora_A.weight", {4, 256}}, {l9 + "lora_B.weight", {256, 4}}}));
  EXPECT_NE(e9.find("layer 9"), std::string::npos) << e9;
  const std::string eh = error(write_peft("half", {{q + "lora_A.weight", {4, 256}}}));
  EXPECT_NE(eh.find("no lora_B"), std::string::npos) << eh;
  const std::string er =
      error(write_peft("rank", {{q + "lora_A.weight", {2, 256}}, {q + "lora_B.weight", {256, 2}}}));
  EXPECT_NE(er.find("r = 4"), std::string::npos) << er;
  const std::string et =
      error(write_peft("tm", {{q + "lora_A.weight", {4, 256}}, {q + "lora_B.weight", {256, 4}}},
                       {{"r", 4}, {"lora_alpha", 8}, {"target_modules", {"v_proj"}}}));
  EXPECT_NE(et.find("target_modules"), std::string::npos) << et;
  const std::string ere =
      error(write_peft("re", {{q + "lora_A.weight", {4, 256}}, {q + "lora_B.weight", {256, 4}}},
                       {{"r", 4}, {"lora_alpha", 8}, {"alpha_pattern", {{"q_proj(", 16}}}}));
  EXPECT_NE(ere.find("alpha_pattern"), std::string::npos) << ere;
}

TEST_F(LoraErrors, WrongArchitectureOrNotAnAdapter) {
  const std::string e = error(lora_path("qwen2-a.gguf"));
  EXPECT_NE(e.find("'qwen2'"), std::string::npos) << e;
  EXPECT_NE(e.find("'llama'"), std::string::npos) << e;
  const std::string base = model_file("llama", "gguf/llama-Q8_0.gguf");
  EXPECT_NE(error(base).find("not a LoRA adapter"), std::string::npos);
  EXPECT_NE(error("/nonexistent/adapter").find("no such file"), std::string::npos);
  // qwen3moe: LoRA on the experts' feed-forward is refused, naming the tensor.
  auto moe = open_model(model_file("qwen3moe", "gguf/qwen3moe-Q8_0.gguf"), Precision::Fast);
  const std::string gate = "base_model.model.model.layers.0.mlp.gate_proj.";
  const std::string em = error_of([&] {
    load(*moe->model,
         {{write_peft("moe", {{gate + "lora_A.weight", {4, 256}}, {gate + "lora_B.weight", {512, 4}}}),
           1.0f}});
  });
  EXPECT_NE(em.find("mixture of experts"), std::string::npos) << em;
}

TEST_F(LoraErrors, AFailedLoadLeavesTheModelAsItWas) {
  const auto ids = ref_ids("llama");
  const auto before = logits_with(*m_, nullptr, ids);
  EXPECT_NE(error(write_peft("half2", {{q + "lora_A.weight", {4, 256}}})), "(no error)");
  EXPECT_TRUE(bitwise_equal(before, logits_with(*m_, nullptr, ids)));
}

TEST(LoraSpec, ParsesPathAndScale) {
  EXPECT_EQ(parse_lora_spec("a/b").path, "a/b");
  EXPECT_EQ(parse_lora_spec("a/b:0.25").scale, 0.25f);
  EXPECT_EQ(parse_lora_spec("a/b:0.25").path, "a/b");
  EXPECT_EQ(parse_lora_spec("c:/x").path, "c:/x");  // not a number: part of the path
  EXPECT_EQ(parse_lora_spec("a:-1").scale, -1.0f);
  EXPECT_NE(error_of([] { parse_lora_spec("a:inf"); }).find("not a finite number"), std::string::npos);
}

}  // namespace
}  // namespace ferrum::test::lora_test
