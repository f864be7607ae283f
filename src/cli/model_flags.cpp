#include "cli/commands.h"
#include "core/fail.h"

namespace ferrum::cli {

CLI::Option* add_precision_option(CLI::App* app, std::string& precision) {
  return app
      ->add_option("--precision", precision,
                   "matrix products: 'fast' (activations quantized like llama.cpp), 'exact' (F32 "
                   "activations) or 'bf16' (as fast, with F16/F32 weight matrices rounded to BF16 at "
                   "load: BF16 dot products, the logits of the model's BF16 conversion)")
      ->check(CLI::IsMember({"fast", "exact", "bf16"}));
}

Precision parse_precision(const std::string& name) {
  if (name == "fast") return Precision::Fast;
  if (name == "exact") return Precision::Exact;
  if (name == "bf16") return Precision::BF16;
  fail("--precision: '{}' is not a precision (use fast, exact or bf16)", name);
}

void ModelFlags::add(CLI::App* app, bool model_optional) {
  auto* opt =
      app->add_option("model", model,
                      "GGUF file, Hugging Face directory, or llama2.c checkpoint" +
                          std::string(model_optional ? " (default: the bundled stories260K model)" : ""));
  if (!model_optional) opt->required();
  app->add_option("--tokenizer", tokenizer, "llama2.c tokenizer.bin (default: beside the checkpoint)");
  app->add_option("-t,--threads", threads, "worker threads (default: all cores)");
  add_precision_option(app, precision);
  app->add_option("--kv-capacity", kv.capacity, "KV cache tokens per sequence (default: min(context, 4096))");
  app->add_option("--kv-layout", kv.layout, "KV cache layout: contiguous or paged (blocks of 16 tokens)")
      ->check(CLI::IsMember({"contiguous", "paged"}));
  app->add_option("--kv-type", kv.type, "KV cache element type: f32, f16, bf16 or int8 (default: f16)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "int8"}));
  app->add_option("--kv-pool", kv.pool_tokens,
                  "KV pool size in tokens over all sequences (default: 4 x capacity, serve: max-num-seqs x "
                  "capacity; at most a quarter of free memory)");
  app->add_flag("--prefix-cache", kv.prefix_cache, "reuse cached prompt prefixes (needs --kv-layout paged)");
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
  o.precision = parse_precision(precision);
  return o;
}

KvOptions ModelFlags::kv_options() const {
  KvOptions o = kv;
  o.apply_env();
  return o;
}

std::string ModelFlags::model_path() const {
#ifdef FERRUM_DEFAULT_MODEL
  if (model.empty()) return FERRUM_DEFAULT_MODEL;
#endif
  if (model.empty()) fail("no model given");
  return model;
}

}  // namespace ferrum::cli
