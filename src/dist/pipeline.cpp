#include "dist/pipeline.h"

#include <cstdio>
#include <cstring>
#include <thread>

#include "core/fail.h"
#include "dist/local_transport.h"
#include "dist/pipeline_model.h"
#include "dist/pipeline_split.h"
#include "dist/rank_check.h"
#include "dist/stage_worker.h"
#include "dist/tensor_parallel.h"
#include "loading/loader.h"
#include "models/registry.h"

namespace ferrum::dist {
namespace {

// The options of one stage: its layers, the LM head on the last.
ModelOptions stage_options(const ModelOptions& opts, StageRange r, bool last) {
  ModelOptions o = opts;
  o.layer_begin = r.begin;
  o.layer_end = r.end;
  o.lm_head = last;
  return o;
}

// The model of one stage in this process: in one piece, or (tp > 1) the model of rank 0 of its
// tensor-parallel ranks, the others as threads.
std::unique_ptr<Model> load_stage(const std::string& path, const ModelOptions& opts, StageRange r, bool last,
                                  int tp) {
  const ModelOptions o = stage_options(opts, r, last);
  if (tp > 1) return tensor_parallel_group_in_process(path, o, tp);
  ModelFiles files = open_model_files(path);
  return create_model(std::move(files.config), std::move(files.weights), o);
}

void print_split(const std::vector<StageRange>& ranges, const char* how) {
  std::string s;
  for (size_t i = 0; i < ranges.size(); ++i)
    s += fmt::format("{}rank {}: layers {}-{}{}", i ? ", " : "", i, ranges[i].begin, ranges[i].end - 1,
                     i + 1 == ranges.size() ? " + output" : "");
  std::fprintf(stderr, "pipeline: %zu stages (%s): %s\n", ranges.size(), how, s.c_str());
}

// The other stages as threads of this process; stops and joins them when destroyed (after the
// pipeline model sent Stop).
class InProcessStages {
 public:
  InProcessStages(const std::string& path, const ModelOptions& opts, const std::vector<StageRange>& ranges,
                  int tp)
      : world_(static_cast<int>(ranges.size())) {
    for (size_t r = 1; r < ranges.size(); ++r)  // loaded here: a stage that fails to load throws now
      models_.push_back(load_stage(path, opts, ranges[r], r + 1 == ranges.size(), tp));
    for (size_t r = 1; r < ranges.size(); ++r)
      threads_.emplace_back(
          [this, r] { StageWorker(*models_[r - 1], world_.endpoint(static_cast<int>(r))).run(); });
  }
  ~InProcessStages() {
    for (auto& t : threads_) t.join();
  }
  Transport& rank0() { return world_.endpoint(0); }

 private:
  LocalWorld world_;
  std::vector<std::unique_ptr<Model>> models_;
  std::vector<std::thread> threads_;
};

// Rank 0's model over in-process stages: the stages live as long as it does.
class InProcessPipeline : public PipelineModel {
 public:
  InProcessPipeline(std::unique_ptr<Model> first, std::unique_ptr<InProcessStages> stages, bool bf16,
                    int micro)
      : PipelineModel(std::move(first), stages->rank0(), bf16, micro), stages_(std::move(stages)) {}
  ~InProcessPipeline() override {
    stop();
    stages_.reset();
  }

 private:
  std::unique_ptr<InProcessStages> stages_;
};

// Stages of tensor-parallel groups over MPI: world rank w is rank w % tp of stage w / tp's group;
// each group's rank 0 also speaks for its stage to the other stages' (the leaders' transport).
std::unique_ptr<Model> load_stage_groups(ModelFiles files, const ModelOptions& opts,
                                         const std::vector<StageRange>& ranges, const PipelineOptions& p,
                                         Transport& world) {
  const int tp = p.tensor_parallel, s = world.rank() / tp, member = world.rank() % tp;
  std::unique_ptr<Transport> group = world.split(s, member);
  std::unique_ptr<Transport> leaders = world.split(member == 0 ? 0 : -1, s);
  const bool last = s + 1 == static_cast<int>(ranges.size());
  Transport& g = *group;
  std::unique_ptr<Model> stage =
      tensor_parallel_group(std::move(files), stage_options(opts, ranges[s], last), g, std::move(group));
  if (!stage) return nullptr;  // a group member: served its share to the end
  if (s > 0) {
    StageWorker(*stage, *leaders).run();
    return nullptr;
  }
  print_split(ranges, fmt::format("MPI ranks, each stage over {} tensor-parallel ranks", tp).c_str());
  const int micro = p.micro_batches > 0 ? p.micro_batches : p.stages;
  return std::make_unique<PipelineModel>(std::move(stage), std::move(leaders), p.bf16_rows, micro);
}

}  // namespace

std::unique_ptr<Model> load_pipeline(const std::string& path, const ModelOptions& opts,
                                     const PipelineOptions& p) {
  if (p.stages < 2) fail("--pipeline {}: a pipeline has 2 stages at least", p.stages);
  ModelFiles files = open_model_files(path);
  if (files.config.is_encoder()) fail("--pipeline: {} is an encoder; pipelines run decoders", path);
  const std::vector<StageRange> ranges = split_model(files, p.split, p.stages);
  if (p.micro_batches < 0) fail("--pipeline-micro-batches must be positive, got {}", p.micro_batches);
  const int micro = p.micro_batches > 0 ? p.micro_batches : p.stages;
  const int tp = std::max(1, p.tensor_parallel);
  if (p.in_process) {
    auto stages = std::make_unique<InProcessStages>(path, opts, ranges, tp);
    print_split(ranges, tp > 1 ? "threads of this process, each stage over tensor-parallel threads"
                               : "threads of this process");
    return std::make_unique<InProcessPipeline>(load_stage(path, opts, ranges[0], false, tp),
                                               std::move(stages), p.bf16_rows, micro);
  }
  Transport* t = mpi_world();
  if (!t)
    fail(
        "--pipeline: this ferrum was built without MPI (Debian: openmpi-bin libopenmpi-dev, which "
        "scripts/setup.sh installs; then rebuild)");
  if (t->size() != p.stages * tp)
    fail("--pipeline {}{} needs {} MPI ranks (mpirun -np {} ferrum ...); this run has {}", p.stages,
         tp > 1 ? fmt::format(" --tp {}", tp) : "", p.stages * tp, p.stages * tp, t->size());
  std::vector<int64_t> split = {tp};
  for (const StageRange& s : ranges) split.insert(split.end(), {s.begin, s.end});
  check_ranks_agree(*t, directory_hash(files, split), path, "--pipeline");
  if (tp > 1) return load_stage_groups(std::move(files), opts, ranges, p, *t);
  const int r = t->rank();
  std::unique_ptr<Model> stage = create_model(std::move(files.config), std::move(files.weights),
                                              stage_options(opts, ranges[r], r + 1 == p.stages));
  if (r > 0) {
    StageWorker(*stage, *t).run();
    return nullptr;
  }
  print_split(ranges, "MPI ranks");
  return std::make_unique<PipelineModel>(std::move(stage), *t, p.bf16_rows, micro);
}

}  // namespace ferrum::dist
