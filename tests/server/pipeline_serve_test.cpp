// `ferrum serve --pipeline 2` and `--tp 2` under mpirun: the server on rank 0, the second half of
// the layers (or half of every layer) on rank 1. Sixteen greedy requests sent at once (continuous
// batching over the ranks, micro-batches in flight through stages) each get the text the same
// request gets alone. Skipped where Open MPI or the binary is
// missing, and in sanitized builds (the MPI library is not built for the sanitizers).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test::pipeline_serve_test {
namespace {

using json = nlohmann::json;

// mpirun started in the background; stopped (SIGTERM, which it passes to the ranks) when the test ends.
class MpiServer {
 public:
  MpiServer(const std::string& args, const std::string& dir) : log_(dir + "/serve.log") {
    const std::string pidfile = dir + "/pid";
    const std::string cmd = "mpirun --allow-run-as-root --oversubscribe -np 2 '" +
                            std::string(FERRUM_BINARY) + "' " + args + " > '" + log_ +
                            "' 2>&1 < /dev/null & echo $! > '" + pidfile + "'";
    if (std::system(cmd.c_str()) == 0) pid_ = std::atoi(read_text(pidfile).c_str());
  }
  ~MpiServer() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 200 && kill(pid_, 0) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (kill(pid_, 0) == 0) kill(pid_, SIGKILL);
  }
  // The port the server printed once it listens (0 if it did not within 60 s).
  int wait_port() const {
    const std::regex at(R"(at http://127\.0\.0\.1:(\d+))");
    for (int i = 0; i < 600 && pid_ > 0; ++i) {
      std::smatch m;
      const std::string log = read_text(log_);
      if (std::regex_search(log, m, at)) return std::stoi(m[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return 0;
  }
  std::string log() const { return read_text(log_); }

 private:
  std::string log_;
  int pid_ = 0;
};

std::string complete(int port, const std::string& prompt) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  const json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  if (!r || r->status != 200) return "(failed: " + (r ? r->body : std::string("no answer")) + ")";
  return json::parse(r->body)["choices"][0]["text"].get<std::string>();
}

class MpiServe : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiServe, SixteenConcurrentRequestsEqualTheirAnswersAlone) {
  if (kSanitizedBuild) GTEST_SKIP() << "sanitized build (Open MPI is not built for the sanitizers)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun (Debian: openmpi-bin)";
  if (!std::filesystem::exists(FERRUM_BINARY)) GTEST_SKIP() << "no ferrum binary in this build";
  const std::string split = GetParam() == "tp" ? " --tp 2" : " --pipeline 2";
  const RunResult probe = run_ferrum("run '" + stories_gguf() + "' -p A -n 1" + split);
  if (probe.err.find("built without MPI") != std::string::npos) GTEST_SKIP() << "ferrum built without MPI";
  const std::string dir = temp_dir();
  MpiServer server("serve '" + stories_gguf() + "'" + split + " --port 0 -t 1 --max-num-seqs 16", dir);
  const int port = server.wait_port();
  ASSERT_GT(port, 0) << server.log();
  EXPECT_NE(
      server.log().find(GetParam() == "tp" ? "tensor parallel: 2 ranks" : "pipeline: 2 stages (MPI ranks)"),
      std::string::npos)
      << server.log();

  const std::vector<std::string> starts = {"Once upon a time", "The little dog", "Lily and Ben", "One day",
                                           "The sun was",      "Tom had a",      "In the park",  "Mom said"};
  std::vector<std::string> prompts;
  for (int i = 0; i < 16; ++i) prompts.push_back(starts[i % 8] + (i < 8 ? "" : " there"));
  std::vector<std::string> alone(16), together(16);
  for (int i = 0; i < 16; ++i) alone[i] = complete(port, prompts[i]);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) threads.emplace_back([&, i] { together[i] = complete(port, prompts[i]); });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(alone[i].find("(failed"), std::string::npos) << alone[i];
    EXPECT_FALSE(alone[i].empty()) << prompts[i];
    EXPECT_EQ(together[i], alone[i]) << prompts[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Splits, MpiServe, ::testing::Values("pipeline", "tp"));

}  // namespace
}  // namespace ferrum::test::pipeline_serve_test
