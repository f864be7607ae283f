#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "core/thread_pool.h"

namespace ferrum::cli {

CLI::Option* add_precision_option(CLI::App* app, std::string& precision) {
  return app
      ->add_option("--precision", precision,
                   "matrix products: 'fast' (activations quantized like llama.cpp), 'exact' (F32 "
                   "activations) or 'bf16' (as fast, with F16/F32 weight matrices rounded to BF16 at "
                   "load: BF16 dot products, the logits of the model's BF16 conversion)")
      ->check(one_of({"fast", "exact", "bf16"}));
}

Precision parse_precision(const std::string& name) {
  if (name == "fast") return Precision::Fast;
  if (name == "exact") return Precision::Exact;
  if (name == "bf16") return Precision::BF16;
  fail("--precision: '{}' is not a precision (use fast, exact or bf16)", name);
}

void ModelFlags::add(CLI::App* app, bool model_optional) {
  const std::string what = "GGUF file, Hugging Face directory, or llama2.c checkpoint";
  app->add_option("model", model, what + (model_optional ? " (default: the bundled stories260K model)" : ""));
  // llama.cpp's spelling; the positional stays.
  app->add_option("-m,--model", model_flag, what)->check(non_empty());
  app->add_option("--tokenizer", tokenizer, "llama2.c tokenizer.bin (default: beside the checkpoint)");
  app->add_option("-t,--threads", threads, "worker threads (more than the cores are cut to the cores)")
      ->transform(whole(1, kMaxThreads))
      ->default_str("all cores");
  add_precision_option(app, precision);
  app->add_option("-c,--ctx-size,--kv-capacity", kv.capacity,
                  "context: KV cache tokens per sequence (at most the model's training context)")
      ->transform(whole(1, int64_t{1} << 24))
      ->default_str("min(training context, 4096)");
  app->add_option("--kv-layout", kv_layout, "KV cache layout: contiguous or paged (blocks of 16 tokens)")
      ->check(one_of({"contiguous", "paged"}));
  app->add_option("--kv-type", kv_type, "KV cache element type")
      ->check(one_of({"f32", "f16", "bf16", "int8"}))
      ->default_str("f16");
  app->add_option("--kv-pool", kv.pool_tokens,
                  "KV pool size in tokens over all sequences (at most a quarter of free memory)")
      ->transform(whole(1, int64_t{1} << 30))
      ->default_str("4 x capacity; serve: max-num-seqs x capacity");
  app->add_flag("--prefix-cache", kv.prefix_cache, "reuse cached prompt prefixes (needs --kv-layout paged)");
  require_model_ = !model_optional;
}

void ModelFlags::add_lora(CLI::App* app) {
  app->add_option(
      "--lora", lora,
      "LoRA adapter PATH[:scale]: a PEFT directory or a GGUF LoRA file (repeatable: the adapters are "
      "summed)");
}

std::shared_ptr<const LoraAdapter> ModelFlags::load_adapter(const Model& model) const {
  if (lora.empty()) return nullptr;
  std::vector<LoraSpec> specs;
  for (const std::string& s : lora) specs.push_back(parse_lora_spec(s));
  return load_lora(model, specs);
}

ModelOptions ModelFlags::options() const {
  ModelOptions o;
  o.n_threads = threads;
  const int cores = ThreadPool::default_threads();
  if (threads > cores) {
    std::fprintf(stderr, "ferrum: note: --threads %d is more than the %d cores; using %d\n", threads, cores,
                 cores);
    o.n_threads = cores;
  }
  o.precision = parse_precision(precision);
  return o;
}

KvOptions ModelFlags::kv_options() const {
  KvOptions o = kv;
  if (!kv_layout.empty()) o.layout = parse_kv_layout(kv_layout);
  if (!kv_type.empty()) o.type = parse_kv_type(kv_type);
  o.apply_env();
  return o;
}

std::string ModelFlags::model_path() const {
  if (!model.empty() && !model_flag.empty())
    fail("the model is given twice ('{}' and -m '{}'); give one", model, model_flag);
  const std::string& path = model.empty() ? model_flag : model;
#ifdef FERRUM_DEFAULT_MODEL
  if (path.empty() && !require_model_) return FERRUM_DEFAULT_MODEL;
#endif
  if (path.empty())
    fail("no model given: pass a GGUF file, a Hugging Face directory or a llama2.c checkpoint");
  return path;
}

}  // namespace ferrum::cli
