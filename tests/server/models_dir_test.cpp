// One server, many models (`ferrum serve --models-dir`): a folder scanned into model ids with the
// presets of models.json; models loaded on first use (concurrent first requests wait for one load),
// each answer equal to that model's served alone; keep_alive (Ollama's durations; 0 unloads when
// the request ends, and the memory goes with it); the least recently used idle model unloaded for
// --max-loaded-models and the memory budget; a file that cannot be loaded named in a 500 while the
// others keep answering; /v1/models states, POST /models/load and /models/unload, Ollama's /api/ps
// and its load / unload calls.
#include "server/models_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/api_error.h"
#include "server/model_pool.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using server::KeepAlive;
using server::ModelPool;
using server::ModelSource;
using server::ModelState;
using server::ServedModel;

std::string qwen_gguf() {
  return data_path("models/qwen2/gguf/qwen2-Q4_0.gguf");
}

// DIR/stories.gguf, DIR/qwen/q4.gguf (links to the fixtures), DIR/broken.gguf (not a GGUF file).
std::string make_models_dir(bool broken = true) {
  const fs::path dir = fs::path(temp_dir()) / "models";
  fs::create_directories(dir / "qwen");
  fs::create_symlink(stories_gguf(), dir / "stories.gguf");
  fs::create_symlink(qwen_gguf(), dir / "qwen" / "q4.gguf");
  if (broken) std::ofstream(dir / "broken.gguf") << "this is not a GGUF file";
  std::ofstream(dir / "notes.txt") << "not a model";
  return dir.string();
}

// The server's loader: an engine of its own per model, a KV pool of `pool_tokens`.
ModelPool::Loader test_loader(std::atomic<int>* loads = nullptr, int64_t pool_tokens = 0) {
  return [loads, pool_tokens](const ModelSource& src) {
    if (loads) ++*loads;
    struct Holder {
      LoadedModel lm;
      std::unique_ptr<Engine> engine;
    };
    auto h = std::make_shared<Holder>();
    ModelOptions o;
    o.n_threads = 2;
    h->lm = load_model(src.path, o);
    EngineOptions eo;
    eo.kv.layout = KvLayout::Paged;
    eo.kv.capacity = src.preset.ctx_size ? src.preset.ctx_size : 256;
    eo.kv.pool_tokens = pool_tokens;
    h->engine = std::make_unique<Engine>(*h->lm.model, *h->lm.tokenizer, eo);
    auto m = std::make_shared<ServedModel>(src.id, h->engine.get(), nullptr, "", src.preset);
    m->path = src.path;
    m->owner = h;
    return m;
  };
}

struct PoolServer {
  std::shared_ptr<ModelPool> pool;
  std::unique_ptr<server::Server> srv;
  int port = 0;
  PoolServer(const std::string& dir, ModelPool::Limits lim, int64_t pool_tokens = 0) {
    pool = std::make_shared<ModelPool>(test_loader(nullptr, pool_tokens), lim);
    for (ModelSource& s : server::scan_models_dir(dir)) pool->add(std::move(s));
    server::ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    srv = std::make_unique<server::Server>(pool, so);
    port = srv->start();
  }
  ~PoolServer() { srv->stop(); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  // The state /v1/models reports for `id`.
  std::string state(const std::string& id) const {
    auto c = client();
    auto r = c.Get("/v1/models");
    const json list = json::parse(r->body);
    for (const json& m : list["data"])
      if (m["id"] == id) return m["status"]["value"];
    return "absent";
  }
};

json completion(httplib::Client& c, const std::string& model, const std::string& prompt, int* status) {
  return post_json(c, "/v1/completions",
                   {{"model", model}, {"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}}, status);
}

// The text a model answers served alone (`ferrum serve MODEL`).
std::string alone(const std::string& path, const std::string& prompt) {
  TestServer ts(path);
  auto c = ts.client();
  int status = 0;
  const json a = completion(c, "test-model", prompt, &status);
  EXPECT_EQ(status, 200) << a.dump();
  return a["choices"][0]["text"];
}

size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST(ModelsDir, ScansGgufFilesAndHfDirectoriesWithPresets) {
  const std::string dir = make_models_dir();
  fs::create_directories(fs::path(dir) / "hf-llama");
  for (const char* f : {"config.json", "tokenizer.json"})
    fs::copy_file(data_path(std::string("models/llama/hf/") + f), fs::path(dir) / "hf-llama" / f);
  std::ofstream(fs::path(dir) / "hf-llama" / "model.safetensors") << "x";
  std::ofstream(fs::path(dir) / "models.json") << R"({
    "stories": {"aliases": ["tiny"], "defaults": {"temperature": 0, "max_tokens": 5}, "system": "Be brief."},
    "story-long": {"path": "stories.gguf", "ctx_size": 128}
  })";
  const auto models = server::scan_models_dir(dir);
  std::vector<std::string> ids;
  for (const auto& m : models) ids.push_back(m.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"broken", "hf-llama", "qwen/q4", "stories", "story-long"}));
  const auto& st = models[3];
  EXPECT_EQ(st.preset.aliases, std::vector<std::string>{"tiny"});
  EXPECT_EQ(st.preset.system, "Be brief.");
  EXPECT_EQ(st.disk_bytes, fs::file_size(stories_gguf()));
  EXPECT_EQ(models[4].preset.ctx_size, 128);
  EXPECT_EQ(fs::path(models[4].path).filename(), "stories.gguf");

  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 9}};
  server::apply_preset(st.preset, body, true);
  EXPECT_EQ(body["max_tokens"], 9);  // the request's own value stays
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["messages"][0], (json{{"role", "system"}, {"content", "Be brief."}}));
}

TEST(ModelsDir, BadPresetFilesAreErrorsNamingFileModelAndField) {
  auto error_of = [](const std::string& text) {
    const std::string dir = make_models_dir(false);
    std::ofstream(fs::path(dir) / "models.json") << text;
    try {
      server::scan_models_dir(dir);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{").find("models.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"stories": {"temprature": 1}})").find("model 'stories': unknown field 'temprature'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stories": {"defaults": {"colour": 1}}})").find("unknown field 'colour'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"nope": {"system": "x"}})").find("model 'nope': no model with this id"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"x": {"path": "missing.gguf"}})").find("missing.gguf does not exist"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stories": {"ctx_size": -4}})").find("'ctx_size' must be"), std::string::npos);
  EXPECT_THROW(server::scan_models_dir("/nonexistent/folder"), Error);
}

TEST(ModelsDir, KeepAliveTakesOllamasDurations) {
  using namespace std::chrono;
  EXPECT_EQ(server::parse_keep_alive(json(300)), KeepAlive(seconds(300)));
  EXPECT_EQ(server::parse_keep_alive(json(0)), KeepAlive::zero());
  EXPECT_EQ(server::parse_keep_alive(json(-1)), server::kKeepForever);
  EXPECT_EQ(server::parse_keep_alive(json("10m")), KeepAlive(minutes(10)));
  EXPECT_EQ(server::parse_keep_alive(json("1h30m")), KeepAlive(minutes(90)));
  EXPECT_EQ(server::parse_keep_alive(json("2.5s")), KeepAlive(2500));
  EXPECT_EQ(server::parse_keep_alive(json("500ms")), KeepAlive(500));
  EXPECT_EQ(server::parse_keep_alive(json("-1m")), server::kKeepForever);
  EXPECT_EQ(server::parse_keep_alive(json("45")), KeepAlive(seconds(45)));
  for (const json& bad : {json("5 minutes"), json(""), json("m"), json("5d"), json(true), json("1e99")})
    EXPECT_THROW(server::parse_keep_alive(bad), server::ApiError) << bad.dump();
}

TEST(ModelsDir, AnswersAlternatingModelsAsEachAloneAndSurvivesABrokenFile) {
  const std::string dir = make_models_dir();
  const std::string prompt = "Once upon a time";
  const std::string want_stories = alone(stories_gguf(), prompt), want_qwen = alone(qwen_gguf(), prompt);
  PoolServer ps(dir, {4, 0, std::chrono::minutes(5)});
  auto c = ps.client();
  EXPECT_EQ(ps.state("stories"), "unloaded");
  for (int round = 0; round < 2; ++round) {
    int status = 0;
    json a = completion(c, "stories", prompt, &status);
    ASSERT_EQ(status, 200) << a.dump();
    EXPECT_EQ(a["model"], "stories");
    EXPECT_EQ(a["choices"][0]["text"], want_stories);
    a = completion(c, "qwen/q4", prompt, &status);
    ASSERT_EQ(status, 200) << a.dump();
    EXPECT_EQ(a["choices"][0]["text"], want_qwen);
    // The file that cannot be loaded: a 500 naming it and why; the others keep answering.
    a = completion(c, "broken", prompt, &status);
    EXPECT_EQ(status, 500);
    EXPECT_NE(a["error"]["message"].get<std::string>().find("broken.gguf"), std::string::npos) << a.dump();
    EXPECT_EQ(a["error"]["code"], "model_load_failed");
  }
  EXPECT_EQ(ps.state("stories"), "loaded");
  EXPECT_EQ(ps.state("qwen/q4"), "loaded");
  EXPECT_EQ(ps.state("broken"), "failed");
  int status = 0;
  json a = completion(c, "nope", prompt, &status);
  EXPECT_EQ(status, 404);
  EXPECT_NE(a["error"]["message"].get<std::string>().find("qwen/q4"), std::string::npos);
  a = post_json(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 400) << a.dump();  // several models: requests must name one
  EXPECT_EQ(a["error"]["code"], "model_required");
  // Chat through a preset-free model and Ollama's name with a tag.
  a = post_json(c, "/api/chat",
                {{"model", "stories:latest"},
                 {"stream", false},
                 {"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
                 {"options", {{"num_predict", 4}}}},
                &status);
  EXPECT_EQ(status, 200) << a.dump();
  EXPECT_EQ(a["model"], "stories");
}

TEST(ModelsDir, KeepAliveZeroUnloadsAndGivesTheMemoryBack) {
  const std::string dir = make_models_dir(false);
  // A model with 32 MB of weights, so that its memory stands well above the process's noise (made
  // by the ferrum binary; the ThreadSanitizer build has none: the fixture without the RSS checks).
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool kFreedMemoryLeaves = false;  // AddressSanitizer keeps freed memory (its quarantine)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr bool kFreedMemoryLeaves = false;
#else
  constexpr bool kFreedMemoryLeaves = true;
#endif
#else
  constexpr bool kFreedMemoryLeaves = true;
#endif
  const bool big =
      kFreedMemoryLeaves && fs::exists(FERRUM_BINARY) &&
      run_ferrum("make-model --shape qwen-0.5b --layers 1 --vocab 2048 --type F16 '" + dir + "/big.gguf'")
              .exit_code == 0;
  const std::string id = big ? "big" : "qwen/q4";
  if (!big) std::printf("  no ferrum binary here, or a sanitizer keeps freed memory: RSS not checked\n");
  PoolServer ps(dir, {4, 0, std::chrono::minutes(5)});
  auto c = ps.client();
  int status = 0;
  const size_t before = rss_bytes();
  json a = post_json(
      c, "/api/generate",
      {{"model", id}, {"prompt", "Hello"}, {"stream", false}, {"options", {{"num_predict", 4}}}}, &status);
  ASSERT_EQ(status, 200) << a.dump();
  auto ps_models = [&] { return json::parse(c.Get("/api/ps")->body)["models"]; };
  ASSERT_EQ(ps_models().size(), 1u);
  EXPECT_EQ(ps_models()[0]["name"], id + ":latest");
  const size_t weights = big ? fs::file_size(fs::path(dir) / "big.gguf") : 0, loaded = rss_bytes();
  if (big) EXPECT_GT(loaded, before + weights / 2);
  a = post_json(c, "/api/generate",
                {{"model", id},
                 {"prompt", "Hello"},
                 {"stream", false},
                 {"keep_alive", 0},
                 {"options", {{"num_predict", 4}}}},
                &status);
  ASSERT_EQ(status, 200) << a.dump();
  for (int i = 0; i < 500 && !ps_models().empty(); ++i)  // up to 10 s: a loaded CI machine
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(ps_models().empty());
  EXPECT_EQ(ps.state(id), "unloaded");
  if (big) {  // the last request's thread may still be letting go of the model: up to 5 s
    size_t now = rss_bytes();
    for (int i = 0; i < 250 && now >= loaded - weights / 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      now = rss_bytes();
    }
    EXPECT_LT(now, loaded - weights / 2);
  }
  // Ollama's load and unload calls: a generate without a prompt.
  a = post_json(c, "/api/generate", {{"model", "stories"}}, &status);
  EXPECT_EQ(a["done_reason"], "load");
  EXPECT_EQ(ps.state("stories"), "loaded");
  a = post_json(c, "/api/generate", {{"model", "stories"}, {"keep_alive", 0}}, &status);
  EXPECT_EQ(a["done_reason"], "unload");
  EXPECT_EQ(ps.state("stories"), "unloaded");
  // A short keep-alive runs out by itself.
  a = post_json(c, "/v1/completions",
                {{"model", "stories"}, {"prompt", "A"}, {"max_tokens", 1}, {"keep_alive", "50ms"}}, &status);
  EXPECT_EQ(status, 200) << a.dump();
  for (int i = 0; i < 500 && ps.state("stories") != "unloaded"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ps.state("stories"), "unloaded");
}

TEST(ModelsDir, LimitsUnloadTheLeastRecentlyUsedIdleModel) {
  const std::string dir = make_models_dir(false);
  {  // --max-loaded-models 1
    PoolServer ps(dir, {1, 0, std::chrono::minutes(5)});
    auto c = ps.client();
    int status = 0;
    completion(c, "stories", "A", &status);
    EXPECT_EQ(ps.state("stories"), "loaded");
    completion(c, "qwen/q4", "A", &status);
    EXPECT_EQ(status, 200);
    EXPECT_EQ(ps.state("stories"), "unloaded");
    EXPECT_EQ(ps.state("qwen/q4"), "loaded");
  }
  {  // a memory budget that holds two loaded models and not a third: the least recent goes
    fs::create_symlink(qwen_gguf(), fs::path(dir) / "qwen" / "again.gguf");
    uint64_t q4 = 0, stories = 0;
    {
      PoolServer ps(dir, {0, 0, std::chrono::minutes(5)});
      auto c = ps.client();
      int status = 0;
      completion(c, "qwen/q4", "A", &status);
      completion(c, "stories", "A", &status);
      const json list = json::parse(c.Get("/v1/models")->body);
      for (const json& m : list["data"]) {
        if (m["id"] == "stories") stories = m["meta"]["size"];
        if (m["id"] == "qwen/q4") q4 = m["meta"]["size"];
      }
    }
    ASSERT_GT(q4, fs::file_size(qwen_gguf()) / 2);
    const uint64_t budget = q4 + stories + fs::file_size(qwen_gguf()) - 1;
    PoolServer ps(dir, {0, budget, std::chrono::minutes(5)});
    auto c = ps.client();
    int status = 0;
    completion(c, "qwen/q4", "A", &status);
    completion(c, "stories", "A", &status);
    EXPECT_EQ(ps.state("qwen/q4"), "loaded");
    completion(c, "qwen/again", "A", &status);
    EXPECT_EQ(status, 200);
    EXPECT_EQ(ps.state("qwen/q4"), "unloaded");  // least recently used
    EXPECT_EQ(ps.state("stories"), "loaded");
    EXPECT_EQ(ps.state("qwen/again"), "loaded");
  }
  {  // a model larger than the whole budget: refused, naming the budget
    PoolServer ps(dir, {0, 1000, std::chrono::minutes(5)});
    auto c = ps.client();
    int status = 0;
    const json a = completion(c, "stories", "A", &status);
    EXPECT_EQ(status, 507) << a.dump();
    EXPECT_NE(a["error"]["message"].get<std::string>().find("--models-memory"), std::string::npos);
  }
}

TEST(ModelsDir, ConcurrentFirstRequestsWaitForOneLoad) {
  const std::string dir = make_models_dir(false);
  std::atomic<int> loads{0};
  auto slow = [&](const ModelSource& src) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return test_loader(&loads)(src);
  };
  ModelPool pool(slow, {4, 0, std::chrono::minutes(5)});
  for (ModelSource& s : server::scan_models_dir(dir)) pool.add(std::move(s));
  std::vector<std::thread> ts;
  std::vector<std::shared_ptr<ServedModel>> got(6);
  for (int i = 0; i < 6; ++i) ts.emplace_back([&, i] { got[i] = pool.acquire("qwen/q4"); });
  for (auto& t : ts) t.join();
  EXPECT_EQ(loads.load(), 1);
  for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
  EXPECT_EQ(pool.list()[0].in_use + pool.list()[1].in_use, 6);
  got.clear();
  // Leases gone: idle, with its keep-alive running.
  for (const auto& s : pool.list())
    if (s.id == "qwen/q4") {
      EXPECT_EQ(s.in_use, 0);
      EXPECT_TRUE(s.expires.has_value());
    }
}

TEST(ModelsDir, LoadAndUnloadRoutes) {
  const std::string dir = make_models_dir(false);
  PoolServer ps(dir, {4, 0, std::chrono::minutes(5)});
  auto c = ps.client();
  int status = 0;
  json a = post_json(c, "/models/load", {{"model", "stories"}}, &status);
  EXPECT_EQ(status, 200) << a.dump();
  EXPECT_EQ(a["status"], "loaded");
  EXPECT_EQ(ps.state("stories"), "loaded");
  const json card = json::parse(c.Get("/v1/models/stories")->body);
  EXPECT_EQ(card["meta"]["n_ctx"], 256);
  a = post_json(c, "/models/unload", {{"model", "stories"}}, &status);
  EXPECT_EQ(status, 200) << a.dump();
  EXPECT_EQ(a["status"], "unloaded");
  EXPECT_EQ(ps.state("stories"), "unloaded");
  a = post_json(c, "/models/load", {{"model", "nope"}}, &status);
  EXPECT_EQ(status, 404);
  a = post_json(c, "/models/unload", json::object(), &status);
  EXPECT_EQ(status, 400);
  const json tags = json::parse(c.Get("/api/tags")->body)["models"];
  EXPECT_EQ(tags.size(), 2u);
}

}  // namespace
}  // namespace ferrum::test
