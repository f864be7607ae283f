// `--tp N` from the command line: under mpirun (when Open MPI is installed and the binary is not
// sanitized: the MPI library is not built for the sanitizers) the ranks are processes and the
// answer is the one-process answer; with the ranks as threads (FERRUM_TP_IN_PROCESS=1) too; a rank
// killed mid-run ends the job; `ferrum info --tp N` shows each rank's share.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mpi_jobs.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

const std::string kRun = "run -p 'Once upon a time' -n 24 --temperature 0 -t 1";

bool mpi_usable() {
  if (kSanitizedBuild || std::system("command -v mpirun > /dev/null 2>&1") != 0) return false;
  return run_ferrum(kRun + " --tp 2").err.find("built without MPI") == std::string::npos;
}

TEST(TensorParallelCli, RanksAsThreadsGiveTheOneProcessAnswer) {
  const RunResult one = run_ferrum(kRun);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ScopedEnv env("FERRUM_TP_IN_PROCESS", "1");
  for (int n : {2, 4}) {
    const RunResult tp = run_ferrum(kRun + " --tp " + std::to_string(n));
    ASSERT_EQ(tp.exit_code, 0) << tp.err;
    EXPECT_EQ(tp.out, one.out) << n << " ranks";
    EXPECT_NE(tp.err.find("tensor parallel: " + std::to_string(n) + " ranks"), std::string::npos) << tp.err;
  }
  {
    ScopedEnv stages("FERRUM_PIPELINE_IN_PROCESS", "1");
    const RunResult grid = run_ferrum(kRun + " --pipeline 2 --tp 2");
    ASSERT_EQ(grid.exit_code, 0) << grid.err;
    EXPECT_EQ(grid.out, one.out);
  }
  const RunResult three = run_ferrum(kRun + " --tp 3");
  EXPECT_EQ(three.exit_code, 1);
  EXPECT_EQ(three.err.rfind("ferrum: error: --tp 3: the model's 8 attention heads", 0), 0u) << three.err;
}

TEST(TensorParallelCli, MpiRanksGiveTheOneProcessAnswer) {
  if (!mpi_usable())
    GTEST_SKIP() << "no usable mpirun (sanitized build, no openmpi-bin, or built without MPI)";
  const RunResult one = run_ferrum(kRun);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string dir = temp_dir();
  const int rc = std::system(
      (mpirun(2) + kRun + " --tp 2 > '" + dir + "/out' 2> '" + dir + "/err' < /dev/null").c_str());
  EXPECT_EQ(rc, 0) << read_text(dir + "/err");
  EXPECT_EQ(read_text(dir + "/out"), one.out) << read_text(dir + "/err");
  // A LoRA adapter, loaded on rank 0 and sent to rank 1, over --tp and over --pipeline.
  const std::string lora = "run '" + data_path("models/llama/gguf/llama-Q8_0.gguf") +
                           "' -p 'Once upon a time' -n 16 --temperature 0 -t 1 --precision exact --lora '" +
                           data_path("lora/llama-a") + "'";
  const RunResult one_lora = run_ferrum(lora);
  ASSERT_EQ(one_lora.exit_code, 0) << one_lora.err;
  for (const char* split : {" --tp 2", " --pipeline 2"}) {
    EXPECT_EQ(
        std::system((mpirun(2) + lora + split + " > '" + dir + "/lora' 2> '" + dir + "/lora.err' < /dev/null")
                        .c_str()),
        0)
        << read_text(dir + "/lora.err");
    EXPECT_EQ(read_text(dir + "/lora"), one_lora.out) << split;
  }
  // Two pipeline stages of two tensor-parallel ranks each: 4 processes.
  EXPECT_EQ(std::system((mpirun(4) + kRun + " --pipeline 2 --tp 2 > '" + dir + "/grid' 2> '" + dir +
                         "/grid.err' < /dev/null")
                            .c_str()),
            0)
      << read_text(dir + "/grid.err");
  EXPECT_EQ(read_text(dir + "/grid"), one.out) << read_text(dir + "/grid.err");
  // `serve`-like batches through `bench` (prefill, decode, 4 sequences at once) run to the end.
  EXPECT_EQ(
      std::system(
          (mpirun(2) + "bench -p 32 -n 8 -r 1 -t 1 --batch 4 --tp 2 > /dev/null 2>&1 < /dev/null").c_str()),
      0);
}

TEST(TensorParallelCli, ARankKilledMidRunEndsTheJob) {
  if (!mpi_usable())
    GTEST_SKIP() << "no usable mpirun (sanitized build, no openmpi-bin, or built without MPI)";
  expect_killed_rank_ends_job("bench -p 0 -n 200 -r 500 -t 1 --tp 2");
}

// Each rank's heads, vocabulary rows and weight bytes: together more than the file (the embedding
// and norms are on every rank), each well under it.
TEST(TensorParallelCli, InfoShowsEachRanksShare) {
  const std::string model = std::string("'") + FERRUM_SOURCE_DIR + "/models/stories260K.gguf'";
  const RunResult r = run_ferrum("info --json --tp 2 " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tensor_parallel"].size(), 2u);
  const auto& a = j["tensor_parallel"][0];
  const auto& b = j["tensor_parallel"][1];
  EXPECT_EQ(a["heads"][1], b["heads"][0]);
  EXPECT_EQ(b["vocabulary"][1], j["n_vocab"]);
  const size_t total = j["weight_bytes"].get<size_t>(), sa = a["weight_bytes"].get<size_t>(),
               sb = b["weight_bytes"].get<size_t>();
  EXPECT_GE(sa + sb, total);
  EXPECT_LT(std::max(sa, sb), total * 3 / 4);
  const RunResult text = run_ferrum("info --tp 2 " + model);
  EXPECT_NE(text.out.find("tensor-parallel rank 1: heads 4-7, vocabulary 256-511"), std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace ferrum::test
