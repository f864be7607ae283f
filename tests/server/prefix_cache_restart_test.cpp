// The prompt cache across a restart (`ferrum serve --prefix-cache-dir`): a long prompt cached by
// one server, the server stopped, a new one started on the same folder: its first request reuses
// the prompt's blocks from disk (reported as cached prompt tokens) and answers exactly what a cold
// server answers; files made unusable are skipped (a cold start, same answer).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

EngineOptions with_disk_cache(const std::string& dir) {
  EngineOptions eo;
  eo.kv.prefix_cache = true;
  eo.kv.prefix_cache_dir = dir;
  eo.kv.prefix_cache_key = "stories260K test";
  return eo;
}

const std::string kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
    "friends. One day, she saw a big red ball under a tree. She ran to the ball and kicked it very high. "
    "The ball flew over the fence and landed in the garden of an old man. Lily was scared, but she went to";

// The answer's text and cached prompt tokens.
std::pair<std::string, int> ask(TestServer& ts) {
  auto c = ts.client();
  int status = 0;
  const json a =
      post_json(c, "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}}, &status);
  EXPECT_EQ(status, 200) << a.dump();
  return {a["choices"][0]["text"], a["usage"]["prompt_tokens_details"]["cached_tokens"]};
}

std::vector<fs::path> block_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".kvb") out.push_back(e.path());
  return out;
}

TEST(PrefixCacheRestart, ANewServerReusesTheCachedPromptFromDisk) {
  std::string cold;
  {
    TestServer ts(stories_gguf());
    cold = ask(ts).first;
  }
  const std::string dir = temp_dir();
  {
    TestServer first(stories_gguf(), {}, with_disk_cache(dir));
    const auto [text, cached] = ask(first);
    EXPECT_EQ(text, cold);
    EXPECT_EQ(cached, 0);
  }  // stopped: its cached blocks are written
  const auto files = block_files(dir);
  ASSERT_GE(files.size(), 4u);
  {
    TestServer second(stories_gguf(), {}, with_disk_cache(dir));
    const auto [text, cached] = ask(second);
    EXPECT_EQ(text, cold);
    EXPECT_GE(cached, 64);  // whole 16-token blocks of the prompt
    EXPECT_GT(second.engine->kv_usage().prefix_disk_reads, 0);
  }
  // Every file damaged: each is skipped, the answer is the cold one.
  for (const fs::path& f : block_files(dir)) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(-3, std::ios::end);
    const char b = static_cast<char>(io.get() ^ 0x55);
    io.seekp(-3, std::ios::end);
    io.put(b);
  }
  TestServer third(stories_gguf(), {}, with_disk_cache(dir));
  const auto [text, cached] = ask(third);
  EXPECT_EQ(text, cold);
  EXPECT_EQ(cached, 0);
}

}  // namespace
}  // namespace ferrum::test
