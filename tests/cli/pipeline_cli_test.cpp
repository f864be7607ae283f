// `--pipeline N` from the command line: under mpirun (when Open MPI is installed and the binary is
// not sanitized: the MPI library is not built for the sanitizers) the stages are processes and the
// answer is the one-process answer; with the stages as threads (FERRUM_PIPELINE_IN_PROCESS=1) too;
// without the ranks it asks for, one clean error line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mpi_jobs.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

const std::string kRun = "run -p 'Once upon a time' -n 24 --temperature 0 -t 1";

TEST(PipelineCli, StagesAsThreadsGiveTheOneProcessAnswer) {
  const RunResult one = run_ferrum(kRun);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ScopedEnv env("FERRUM_PIPELINE_IN_PROCESS", "1");
  const RunResult two = run_ferrum(kRun + " --pipeline 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  EXPECT_NE(two.err.find("pipeline: 2 stages"), std::string::npos) << two.err;
  const RunResult three = run_ferrum(kRun + " --pipeline 3 --pipeline-split 1,2,2");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(three.out, one.out);
  EXPECT_NE(three.err.find("rank 1: layers 1-2"), std::string::npos) << three.err;
}

TEST(PipelineCli, MpiRanksGiveTheOneProcessAnswer) {
  if (kSanitizedBuild) GTEST_SKIP() << "sanitized build (Open MPI is not built for the sanitizers)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun (Debian: openmpi-bin)";
  const RunResult probe = run_ferrum(kRun + " --pipeline 2");
  if (probe.err.find("built without MPI") != std::string::npos) GTEST_SKIP() << "ferrum built without MPI";
  const RunResult one = run_ferrum(kRun);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string dir = temp_dir();
  const int rc = std::system(
      (mpirun(2) + kRun + " --pipeline 2 > '" + dir + "/out' 2> '" + dir + "/err' < /dev/null").c_str());
  EXPECT_EQ(rc, 0) << read_text(dir + "/err");
  EXPECT_EQ(read_text(dir + "/out"), one.out) << read_text(dir + "/err");
  // Three ranks, and `eval`'s logits (every position's, as .npy) bit for bit.
  EXPECT_EQ(
      std::system((mpirun(3) + kRun + " --pipeline 3 > '" + dir + "/out3' 2> /dev/null < /dev/null").c_str()),
      0);
  EXPECT_EQ(read_text(dir + "/out3"), one.out);
  const std::string eval = "eval '" + std::string(FERRUM_SOURCE_DIR) +
                           "/models/stories260K.gguf' -p 'Once upon a time there was' -t 1 --out '" + dir +
                           "/e.json' --logits-npy '";
  ASSERT_EQ(run_ferrum(eval + dir + "/one.npy'").exit_code, 0);
  EXPECT_EQ(
      std::system((mpirun(2) + eval + dir + "/two.npy' --pipeline 2 > /dev/null 2>&1 < /dev/null").c_str()),
      0);
  const std::string a = read_text(dir + "/one.npy"), b = read_text(dir + "/two.npy");
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "eval's logits through 2 ranks differ from one process's";
}

// A rank that dies mid-run ends the job: mpirun (and rank 0 with it) exits non-zero within 10 s.
TEST(PipelineCli, ARankKilledMidRunEndsTheJob) {
  if (kSanitizedBuild) GTEST_SKIP() << "sanitized build (Open MPI is not built for the sanitizers)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun (Debian: openmpi-bin)";
  if (run_ferrum(kRun + " --pipeline 2").err.find("built without MPI") != std::string::npos)
    GTEST_SKIP() << "ferrum built without MPI";
  // A long benchmark through 2 ranks; rank 1 is killed.
  expect_killed_rank_ends_job("bench -p 0 -n 200 -r 500 -t 1 --pipeline 2");
}

TEST(PipelineCli, TooFewRanksIsOneCleanError) {
  const RunResult r = run_ferrum(kRun + " --pipeline 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.err.find("needs 2 MPI ranks") != std::string::npos ||
              r.err.find("built without MPI") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.rfind("ferrum: error: --pipeline", 0), 0u) << r.err;
  const RunResult split = run_ferrum(kRun + " --pipeline-split 2,3");
  EXPECT_EQ(split.exit_code, 1);
  EXPECT_NE(split.err.find("--pipeline-split needs --pipeline N"), std::string::npos) << split.err;
}

// `ferrum info --pipeline N`: each stage's layers and weight bytes; together they cover the file.
TEST(PipelineCli, InfoShowsEachStagesShare) {
  const std::string model = std::string("'") + FERRUM_SOURCE_DIR + "/models/stories260K.gguf'";
  const RunResult r = run_ferrum("info --json --pipeline 2 " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["pipeline"].size(), 2u);
  const auto& a = j["pipeline"][0];
  const auto& b = j["pipeline"][1];
  EXPECT_EQ(a["layers"][0], 0);
  EXPECT_EQ(a["layers"][1], b["layers"][0]);
  EXPECT_EQ(b["layers"][1], j["n_layer"]);
  const size_t total = j["weight_bytes"].get<size_t>(), sa = a["weight_bytes"].get<size_t>(),
               sb = b["weight_bytes"].get<size_t>();
  EXPECT_GT(sa, 0u);
  EXPECT_GT(sb, 0u);
  EXPECT_GE(sa + sb, total);  // a tied embedding is on both ends
  EXPECT_LT(std::max(sa, sb), total);
  const RunResult text = run_ferrum("info --pipeline 2 --pipeline-split 1,4 " + model);
  EXPECT_NE(text.out.find("pipeline rank 1: layers 1-4 + output"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace ferrum::test
