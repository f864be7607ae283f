// Progress output of the long commands: a plain line per 10% of each stage when stderr is not a
// terminal, one line redrawn in place on a terminal, nothing with --quiet.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "loading/loader.h"
#include "test_util.h"

namespace ferrum {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Progress, QuantizePrintsALinePerTenthOfEachStage) {
  const std::string in = test::data_path("models/qwen3/gguf/qwen3-Q8_0.gguf");
  const std::string out = (std::filesystem::temp_directory_path() / "ferrum_progress_q4.gguf").string();
  auto r = test::run_ferrum("quantize '" + in + "' '" + out + "' Q4_0 -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(R"((quantize|write): +(\d+)% \(.* of .*, (\d+)/(\d+) tensors.*\))");
  std::map<std::string, std::vector<int>> pct;
  for (const std::string& l : lines_of(r.err)) {
    std::smatch m;
    if (std::regex_match(l, m, line))
      pct[m[1]].push_back(std::stoi(m[2]));
    else
      EXPECT_EQ(l.rfind("wrote " + out + " (", 0), 0u) << l;
  }
  for (const char* stage : {"quantize", "write"}) {
    const std::vector<int>& p = pct[stage];
    ASSERT_FALSE(p.empty()) << stage << "\n" << r.err;
    EXPECT_LE(p.size(), 10u) << r.err;
    EXPECT_EQ(p.back(), 100) << r.err;
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()) && std::adjacent_find(p.begin(), p.end()) == p.end())
        << r.err;
  }
  auto q = test::run_ferrum("quantize '" + in + "' '" + out + "' Q4_0 -t 2 --quiet");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.err, "");
  EXPECT_EQ(q.out, "");
  std::filesystem::remove(out);
}

TEST(Progress, TerminalRedrawsOneLineAndQuietPrintsNothing) {
  FILE* f = std::tmpfile();
  {
    cli::ProgressDisplay d(false, f, /*terminal=*/1);
    for (int i = 1; i <= 4; ++i) d.update({"write", uint64_t(i) * 256, 1024, i, 4});
    d.message("wrote x");
  }
  std::rewind(f);
  std::string s(4096, '\0');
  s.resize(std::fread(s.data(), 1, s.size(), f));
  std::fclose(f);
  EXPECT_EQ(s.front(), '\r');
  EXPECT_NE(s.find("write [########################] 100% 1.0 KiB of 1.0 KiB, 4/4 tensors"),
            std::string::npos)
      << s;
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2) << s;  // the finished bar's line, then the message
  EXPECT_TRUE(s.ends_with("\nwrote x\n")) << s;

  FILE* g = std::tmpfile();
  {
    cli::ProgressDisplay d(true, g, 1);
    d.update({"write", 1024, 1024, 1, 1});
    d.message("wrote x");
  }
  EXPECT_EQ(std::ftell(g), 0);
  std::fclose(g);
}

// The model reports each layer's weights as they are made ready: n_layer calls, bytes rising to
// the layers' total.
TEST(Progress, ModelLoadReportsEveryLayer) {
  ModelOptions o;
  o.n_threads = 1;
  std::vector<std::array<uint64_t, 4>> calls;
  o.load_progress = [&](int l, int n, uint64_t done, uint64_t total) {
    calls.push_back({uint64_t(l), uint64_t(n), done, total});
  };
  LoadedModel lm = load_model(test::data_path("models/qwen3/gguf/qwen3-Q8_0.gguf"), o);
  const int n_layer = lm.model->config().n_layer;
  ASSERT_EQ(calls.size(), size_t(n_layer));
  for (int i = 0; i < n_layer; ++i) {
    EXPECT_EQ(calls[i][0], uint64_t(i + 1));
    EXPECT_EQ(calls[i][1], uint64_t(n_layer));
    if (i > 0) EXPECT_GT(calls[i][2], calls[i - 1][2]);
  }
  EXPECT_EQ(calls.back()[2], calls.back()[3]);
  EXPECT_GT(calls.back()[3], 0u);
}

}  // namespace
}  // namespace ferrum
