// Sub-commands of the `ferrum` binary. Each registers its flags on a CLI11 sub-app and returns a
// runner that is called after parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "ferrum/loader.h"
#include "ferrum/lora.h"
#include "ferrum/model.h"

namespace ferrum::cli {

using Runner = std::function<int()>;

// A rank other than 0 of a pipeline or of a tensor-parallel job served its part to the end: the
// command has nothing more to do.
struct LaterRankDone {};

// Flags shared by every command that loads a model.
struct ModelFlags {
  static constexpr int kMaxThreads = 4096;  // ThreadPool::kMaxThreads
  std::string model;       // the positional path
  std::string model_flag;  // -m/--model
  std::string tokenizer;  // llama2.c only
  int threads = 0;
  std::string precision = "fast";
  KvOptions kv;                    // capacity, pool, prefix cache
  std::string kv_layout, kv_type;  // --kv-layout / --kv-type as given (parsed by kv_options)
  std::vector<std::string> lora;  // --lora PATH[:scale], summed
  int pipeline = 1;                // --pipeline N: stages over MPI ranks
  int pipeline_micro = 0;          // --pipeline-micro-batches (0: one per stage)
  std::string pipeline_split, pipeline_dtype = "f32";
  int tensor_parallel = 1;  // --tp N: every layer split over MPI ranks
  void add(CLI::App* app, bool model_optional);
  void add_lora(CLI::App* app);      // run, eval, bench
  void add_pipeline(CLI::App* app);  // run, eval, bench, serve: --pipeline* and --tp
  // The model (rank 0's with --pipeline or --tp) and its tokenizer. On the other ranks it serves
  // the rank's part until rank 0 is done, then throws LaterRankDone.
  LoadedModel load(const ModelOptions& opts) const;
  LoadedModel load_tensor_parallel(const std::string& path, const ModelOptions& opts) const;
  LoadedModel with_tokenizer(std::unique_ptr<Model> model, const std::string& path) const;
  // The --lora adapters loaded as one for `model`; null when none was given.
  std::shared_ptr<const LoraAdapter> load_adapter(const Model& model) const;
  ModelOptions options() const;
  KvOptions kv_options() const;  // the flags, then FERRUM_KV_* for what they leave unset
  // The model path, or the bundled default model when none was given.
  std::string model_path() const;

 private:
  bool require_model_ = false;
};

// --precision (ModelFlags and `embed`): fast, exact or bf16.
CLI::Option* add_precision_option(CLI::App* app, std::string& precision);
Precision parse_precision(const std::string& name);

Runner add_run(CLI::App& app);
Runner add_eval(CLI::App& app);
Runner add_info(CLI::App& app);
Runner add_convert(CLI::App& app);
Runner add_quantize(CLI::App& app);
Runner add_tokenize(CLI::App& app);
Runner add_embed(CLI::App& app);
Runner add_detokenize(CLI::App& app);
Runner add_template(CLI::App& app);
Runner add_serve(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_grammar_bench(CLI::App& app);
Runner add_export_lora(CLI::App& app);
Runner add_make_model(CLI::App& app);  // hidden: random-weight models for benchmarks
Runner add_make_lora(CLI::App& app);   // hidden: random LoRA adapters for benchmarks

}  // namespace ferrum::cli
