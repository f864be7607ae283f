// `ferrum make-lora` (hidden, for benchmarks): writes a GGUF LoRA file with random matrices for a
// model's shape (q/k/v/o and gate/up/down of every layer, F16 or F32), so adapter overhead can be
// measured on realistic shapes without downloading any adapter.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "core/fp16.h"
#include "formats/gguf_writer.h"
#include "loading/loader.h"

namespace ferrum::cli {
namespace {

struct MakeLoraFlags {
  std::string model, out, type = "F16";
  int rank = 16;
  float alpha = 32;
  uint32_t seed = 1;
};

// One random matrix (rows x cols, uniform in [-a, a)) stored as `t`, appended to `bufs`.
const std::vector<uint8_t>& random_matrix(std::vector<std::vector<uint8_t>>& bufs, std::mt19937& rng, DType t,
                                          int64_t rows, int64_t cols, float a) {
  std::uniform_real_distribution<float> u(-a, a);
  std::vector<uint8_t>& b = bufs.emplace_back(row_size(t, cols) * rows);
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float v = u(rng);
    if (t == DType::F16)
      reinterpret_cast<uint16_t*>(b.data())[i] = f32_to_f16(v);
    else
      reinterpret_cast<float*>(b.data())[i] = v;
  }
  return b;
}

int make_lora(const MakeLoraFlags& f) {
  if (f.rank <= 0) fail("--rank must be positive, got {}", f.rank);
  const ModelConfig c = open_model_files(f.model).config;
  const DType t = f.type == "F16" ? DType::F16 : DType::F32;
  const int64_t d = c.n_embd, qd = c.q_dim(), kvd = c.kv_dim(), ff = c.n_ff;
  struct Target {
    const char* name;
    int64_t in, out;
  };
  std::vector<Target> targets = {
      {"attn_q", d, qd}, {"attn_k", d, kvd}, {"attn_v", d, kvd}, {"attn_output", qd, d}};
  if (c.n_expert == 0)
    targets.insert(targets.end(), {{"ffn_gate", d, ff}, {"ffn_up", d, ff}, {"ffn_down", ff, d}});
  gguf::Writer w;
  w.set_string("general.architecture", gguf_arch(c.arch));
  w.set_string("general.type", "adapter");
  w.set_string("adapter.type", "lora");
  w.set_f32("adapter.lora.alpha", f.alpha);
  std::mt19937 rng(f.seed);
  std::vector<std::vector<uint8_t>> bufs;
  bufs.reserve(c.n_layer * targets.size() * 2);
  for (int l = 0; l < c.n_layer; ++l)
    for (const Target& tg : targets) {
      const std::string name = fmt::format("blk.{}.{}.weight", l, tg.name);
      const auto& a = random_matrix(bufs, rng, t, f.rank, tg.in, 1.0f / std::sqrt(static_cast<float>(tg.in)));
      w.add_tensor(name + ".lora_a", t, {tg.in, f.rank}, a.data(), a.size());
      const auto& b = random_matrix(bufs, rng, t, tg.out, f.rank, 0.01f);
      w.add_tensor(name + ".lora_b", t, {f.rank, tg.out}, b.data(), b.size());
    }
  w.write(f.out);
  std::fprintf(stderr, "wrote %s (rank %d, %zu matrices)\n", f.out.c_str(), f.rank, bufs.size());
  return 0;
}

}  // namespace

Runner add_make_lora(CLI::App& app) {
  auto f = std::make_shared<MakeLoraFlags>();
  CLI::App* sub =
      app.add_subcommand("make-lora", "write a GGUF LoRA with random matrices for a model (benchmarks)");
  sub->group("");  // a developer tool: not listed in --help
  sub->add_option("model", f->model, "the base model (its shape is used)")->required();
  sub->add_option("output", f->out, "output GGUF LoRA file")->required();
  sub->add_option("--rank", f->rank, "LoRA rank r")->transform(whole(1, 4096));
  sub->add_option("--alpha", f->alpha, "adapter.lora.alpha (scale = alpha / r)")->check(real(-1e6, 1e6));
  sub->add_option("--type", f->type, "matrix type: F16 or F32")->check(one_of({"F16", "F32"}));
  sub->add_option("--seed", f->seed, "random seed")->transform(whole(0, INT64_MAX));
  return [f] { return make_lora(*f); };
}

}  // namespace ferrum::cli
