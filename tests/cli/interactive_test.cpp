// `ferrum run` at a terminal, driven through a pseudo-terminal as a person would: Ctrl-C stops
// the answer being generated and brings the prompt back, the next question is answered, and
// Ctrl-D at the empty prompt ends the session with exit code 0.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test {
namespace {

class Terminal {
 public:
  explicit Terminal(const std::vector<std::string>& args) {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(FERRUM_BINARY, argv.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool started() const { return pid_ > 0; }
  void type(const std::string& s) {
    ASSERT_EQ(write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }

  // Reads until `done(all output so far)` holds; false after `seconds` without it.
  template <typename Done>
  bool wait_for(Done done, double seconds = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done(out_)) {
      if (std::chrono::steady_clock::now() > end) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return done(out_);
      out_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  // The exit code after the session ends (-1: still running after `seconds`).
  int exit_code(double seconds = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      wait_for([](const std::string&) { return false; }, 0.1);  // drain, so the child never blocks
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  const std::string& output() const { return out_; }

 private:
  int fd_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string out_;
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Interactive, CtrlCStopsTheAnswerAndTheNextQuestionIsAnswered) {
  // A tiny random model with a long context: an answer of 60000 tokens takes far longer than a
  // person (or this test) needs to press Ctrl-C.
  const std::string dir = temp_dir();
  const std::string model = dir + "/long.gguf";
  ASSERT_EQ(run_ferrum("make-model '" + model + "' --shape tiny --context 65536").exit_code, 0);
  Terminal t({"ferrum", "run", model, "-c", "65536", "--kv-pool", "65536", "-n", "60000", "--ignore-eos",
              "-t", "1"});
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for([](const std::string& o) { return o.find("> ") != std::string::npos; }))
      << t.output();

  for (int turn = 1; turn <= 2; ++turn) {
    const std::string question = turn == 1 ? "hello there" : "and again";
    t.type(question + "\n");
    const size_t asked = t.output().size();
    // The answer is streaming: well past the echo of the question.
    ASSERT_TRUE(t.wait_for([&](const std::string& o) {
      const size_t q = o.find(question, asked > 64 ? asked - 64 : 0);
      return q != std::string::npos && o.size() > q + question.size() + 400;
    })) << t.output();
    t.type("\x03");
    ASSERT_TRUE(t.wait_for([&](const std::string& o) {
      const size_t at = o.rfind("interrupted");
      return count(o, "tokens: interrupted") == static_cast<size_t>(turn) &&
             o.find("> ", at) != std::string::npos;
    })) << t.output().substr(t.output().size() > 2000 ? t.output().size() - 2000 : 0);
  }
  t.type("\x04");  // Ctrl-D at the empty prompt
  EXPECT_EQ(t.exit_code(), 0) << t.output().substr(t.output().size() > 2000 ? t.output().size() - 2000 : 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferrum::test
