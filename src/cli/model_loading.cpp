// Loading a command's model: in this process, or as rank 0 of a job whose other parts run on other
// MPI ranks: the first stage of a pipeline (--pipeline), or a share of every layer (--tp).
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/progress.h"
#include "core/fail.h"
#include "dist/pipeline.h"
#include "dist/tensor_parallel.h"

namespace ferrum::cli {

void ModelFlags::add_pipeline(CLI::App* app) {
  app->add_option("--pipeline", pipeline,
                  "split the layers into N stages, one per MPI rank: mpirun -np N ferrum ... --pipeline N")
      ->transform(whole(1, 1024));
  app->add_option("--pipeline-split", pipeline_split,
                  "layers of each stage, e.g. 10,14 (default: balanced by weight bytes)")
      ->check(non_empty());
  app->add_option("--pipeline-micro-batches", pipeline_micro,
                  "cut each pass into at most this many micro-batches, so the stages work at once")
      ->transform(whole(1, 4096))
      ->default_str("the number of stages");
  app->add_option("--pipeline-dtype", pipeline_dtype,
                  "hidden states between stages: f32 or bf16 (half the bytes)")
      ->check(one_of({"f32", "bf16"}));
  app->add_option("--tp,--tensor-parallel", tensor_parallel,
                  "split every layer (attention heads, FFN width, vocabulary) over N MPI ranks: "
                  "mpirun -np N ferrum ... --tp N")
      ->transform(whole(1, 1024));
}

namespace {

// A model's bytes on disk (a file, or a Hugging Face directory's files); 0 when unknown.
uint64_t bytes_on_disk(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return std::filesystem::file_size(path, ec);
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(path, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

constexpr uint64_t kShowLoadProgress = 1ull << 30;  // files from 1 GiB on show their loading

}  // namespace

LoadedModel ModelFlags::load(const ModelOptions& opts) const {
  const std::string path = model_path();
  if (tensor_parallel > 1 && pipeline <= 1) return load_tensor_parallel(path, opts);
  if (pipeline <= 1) {
    if (!pipeline_split.empty()) fail("--pipeline-split needs --pipeline N");
    if (bytes_on_disk(path) < kShowLoadProgress) return load_model(path, opts, tokenizer);
    ProgressDisplay progress(false);
    ModelOptions o = opts;
    o.load_progress = [&progress](int layers, int n_layers, uint64_t done, uint64_t total) {
      progress.update({"load", done, total, layers, n_layers, "layers"});
    };
    return load_model(path, o, tokenizer);
  }
  dist::PipelineOptions p;
  p.stages = pipeline;
  p.split = pipeline_split;
  p.bf16_rows = pipeline_dtype == "bf16";
  p.micro_batches = pipeline_micro;
  p.tensor_parallel = tensor_parallel;  // each stage over this many ranks
  // The stages as threads of this process instead of MPI ranks (tests; checking a split).
  if (const char* v = std::getenv("FERRUM_PIPELINE_IN_PROCESS")) p.in_process = std::string(v) == "1";
  return with_tokenizer(dist::load_pipeline(path, opts, p), path);
}

LoadedModel ModelFlags::load_tensor_parallel(const std::string& path, const ModelOptions& opts) const {
  dist::TensorParallelOptions p;
  p.ranks = tensor_parallel;
  // The ranks as threads of this process instead of MPI ranks (tests).
  if (const char* v = std::getenv("FERRUM_TP_IN_PROCESS")) p.in_process = std::string(v) == "1";
  return with_tokenizer(dist::load_tensor_parallel(path, opts, p), path);
}

// Rank 0's model with its tokenizer; on the other ranks (null model) the command is done.
LoadedModel ModelFlags::with_tokenizer(std::unique_ptr<Model> model, const std::string& path) const {
  if (!model) throw LaterRankDone{};
  LoadedModel lm;
  lm.model = std::move(model);
  lm.path = path;
  lm.tokenizer = load_tokenizer(path, tokenizer);
  if (lm.tokenizer->n_vocab() > lm.model->config().n_vocab)
    fail("{}: the tokenizer has {} tokens but the model's vocabulary has only {}", path,
         lm.tokenizer->n_vocab(), lm.model->config().n_vocab);
  return lm;
}

}  // namespace ferrum::cli
