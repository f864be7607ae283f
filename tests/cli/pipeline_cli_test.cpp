// `--pipeline N` from the command line: under mpirun (when Open MPI is installed and the binary is
// not sanitized: the MPI library is not built for the sanitizers) the stages are processes and the
// answer is the one-process answer; with the stages as threads (FERRUM_PIPELINE_IN_PROCESS=1) too;
// without the ranks it asks for, one clean error line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace ferrum::test {
namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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
  if (kSanitized) GTEST_SKIP() << "sanitized build (Open MPI is not built for the sanitizers)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun (Debian: openmpi-bin)";
  const RunResult probe = run_ferrum(kRun + " --pipeline 2");
  if (probe.err.find("built without MPI") != std::string::npos) GTEST_SKIP() << "ferrum built without MPI";
  const RunResult one = run_ferrum(kRun);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string mpirun =
      "mpirun --allow-run-as-root --oversubscribe -np 2 '" + std::string(FERRUM_BINARY) + "' ";
  const std::string dir = temp_dir();
  const int rc = std::system(
      (mpirun + kRun + " --pipeline 2 > '" + dir + "/out' 2> '" + dir + "/err' < /dev/null").c_str());
  EXPECT_EQ(rc, 0) << slurp(dir + "/err");
  EXPECT_EQ(slurp(dir + "/out"), one.out) << slurp(dir + "/err");
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

}  // namespace
}  // namespace ferrum::test
