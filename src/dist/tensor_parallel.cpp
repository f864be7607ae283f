#include "dist/tensor_parallel.h"

#include <cstdio>
#include <thread>

#include "core/fail.h"
#include "dist/local_transport.h"
#include "dist/rank_check.h"
#include "dist/tensor_parallel_model.h"
#include "dist/transport_group.h"
#include "loading/loader.h"
#include "models/registry.h"
#include "models/tensor_parallel.h"

namespace ferrum::dist {
namespace {

// Rank t.rank()'s share of the model, summing over t's group; `shares` is set to what it holds.
std::unique_ptr<Model> load_share(ModelFiles files, const ModelOptions& opts, Transport& t,
                                  TensorShares& shares) {
  shares = shard_weights(files.config, files.weights, t.rank(), t.size(),
                         {opts.layer_begin, opts.layer_end, opts.lm_head});
  ModelOptions o = opts;
  o.tensor_parallel = std::make_shared<TransportGroup>(t);
  return create_model(std::move(files.config), std::move(files.weights), o);
}

void print_split(const ModelConfig& c, int n) {
  std::string s;
  for (int r = 0; r < n; ++r) {
    const ShareRange v = vocab_share(c, r, n);
    s += fmt::format("{}rank {}: heads {}-{}, vocabulary {}-{}", r ? ", " : "", r, c.n_head * r / n,
                     c.n_head * (r + 1) / n - 1, v.begin, v.end - 1);
  }
  std::fprintf(stderr, "tensor parallel: %d ranks: %s\n", n, s.c_str());
}

// The other ranks as threads of this process; joins them when destroyed (after the model sent Stop).
class InProcessRanks {
 public:
  InProcessRanks(const std::string& path, const ModelOptions& opts, const ModelConfig& full, int n)
      : world_(n), shares_(n) {
    for (int r = 1; r < n; ++r)  // loaded here: a share that fails to load throws now
      models_.push_back(load_share(open_model_files(path), opts, world_.endpoint(r), shares_[r]));
    for (int r = 1; r < n; ++r)
      threads_.emplace_back([this, r, full] {
        TensorParallelWorker(*models_[r - 1], full, shares_[r], world_.endpoint(r)).run();
      });
  }
  ~InProcessRanks() {
    for (auto& t : threads_) t.join();
  }
  Transport& rank0() { return world_.endpoint(0); }

 private:
  LocalWorld world_;
  std::vector<std::unique_ptr<Model>> models_;
  std::vector<TensorShares> shares_;
  std::vector<std::thread> threads_;
};

class InProcessTensorParallel : public TensorParallelModel {
 public:
  InProcessTensorParallel(std::unique_ptr<Model> local, const ModelConfig& full, const TensorShares& shares,
                          std::unique_ptr<InProcessRanks> ranks)
      : TensorParallelModel(std::move(local), full, shares, ranks->rank0()), ranks_(std::move(ranks)) {}
  ~InProcessTensorParallel() override {
    stop();
    ranks_.reset();
  }

 private:
  std::unique_ptr<InProcessRanks> ranks_;
};

}  // namespace

std::unique_ptr<Model> tensor_parallel_group_in_process(const std::string& path, const ModelOptions& opts,
                                                        int n) {
  ModelFiles files = open_model_files(path);
  const ModelConfig full = files.config;
  auto ranks = std::make_unique<InProcessRanks>(path, opts, full, n);
  TensorShares shares;
  std::unique_ptr<Model> local = load_share(std::move(files), opts, ranks->rank0(), shares);
  return std::make_unique<InProcessTensorParallel>(std::move(local), full, shares, std::move(ranks));
}

std::unique_ptr<Model> tensor_parallel_group(ModelFiles files, const ModelOptions& opts, Transport& group,
                                             std::unique_ptr<Transport> owned) {
  const ModelConfig full = files.config;
  TensorShares shares;
  std::unique_ptr<Model> local = load_share(std::move(files), opts, group, shares);
  if (group.rank() > 0) {
    TensorParallelWorker(*local, full, shares, group).run();
    return nullptr;
  }
  if (owned) return std::make_unique<TensorParallelModel>(std::move(local), full, shares, std::move(owned));
  return std::make_unique<TensorParallelModel>(std::move(local), full, shares, group);
}

std::unique_ptr<Model> load_tensor_parallel(const std::string& path, const ModelOptions& opts,
                                            const TensorParallelOptions& p) {
  if (p.ranks < 2) fail("--tp {}: tensor parallelism needs 2 ranks at least", p.ranks);
  if (p.in_process) {  // (each rank opens the files itself)
    auto m = tensor_parallel_group_in_process(path, opts, p.ranks);
    print_split(m->config(), p.ranks);
    return m;
  }
  ModelFiles files = open_model_files(path);
  if (files.config.is_encoder()) fail("--tp: {} is an encoder; tensor parallelism runs decoders", path);
  const ModelConfig full = files.config;
  Transport* t = mpi_world();
  if (!t)
    fail(
        "--tp: this ferrum was built without MPI (Debian: openmpi-bin libopenmpi-dev, which "
        "scripts/setup.sh installs; then rebuild)");
  if (t->size() != p.ranks)
    fail("--tp {} needs {} MPI ranks (mpirun -np {} ferrum ...); this run has {}", p.ranks, p.ranks, p.ranks,
         t->size());
  const int64_t split[] = {int64_t{p.ranks}, -1};  // -1: tensor parallel (a pipeline hashes layer ranges)
  check_ranks_agree(*t, directory_hash(files, split), path, "--tp");
  auto m = tensor_parallel_group(std::move(files), opts, *t, nullptr);
  if (m) print_split(full, p.ranks);
  return m;
}

}  // namespace ferrum::dist
