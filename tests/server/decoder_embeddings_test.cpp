// POST /v1/embeddings on a decoder (`ferrum serve` attaches an Embedder to the engine): the
// vectors are models/decoder_embeddings' (same batch or alone, unit length, last vs mean), the
// input rules and errors are the encoder's, and generation goes on while embeddings are computed.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "loading/loader.h"
#include "raw_http.h"
#include "server/embeddings.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum {
namespace {

using json = nlohmann::json;

struct DecoderServer {
  LoadedModel lm;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<server::Embedder> emb;
  std::unique_ptr<server::Server> srv;
  int port = 0;

  explicit DecoderServer(Pooling pooling) {
    ModelOptions o;
    o.n_threads = 2;
    lm = load_model(test::stories_gguf(), o);
    EngineOptions eo;
    eo.kv.layout = KvLayout::Paged;
    eo.kv.capacity = 256;
    engine = std::make_unique<Engine>(*lm.model, *lm.tokenizer, eo);
    EmbedOptions d;
    d.pooling = pooling;
    emb = std::make_unique<server::Embedder>(*engine, d);
    server::ServerOptions so;
    so.port = 0;
    so.model_name = "test-model";
    srv = std::make_unique<server::Server>(engine.get(), emb.get(), so);
    port = srv->start();
  }
  ~DecoderServer() {
    engine->shutdown(true);
    srv->stop();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
};

std::vector<std::vector<float>> vectors(const json& j) {
  std::vector<std::vector<float>> out;
  for (const auto& e : j["data"]) out.push_back(e["embedding"].get<std::vector<float>>());
  return out;
}

// What the model computes for these texts, outside the server (a second copy of the model).
std::vector<std::vector<float>> reference(const std::vector<std::string>& texts, Pooling p) {
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel lm = load_model(test::stories_gguf(), o);
  std::vector<std::vector<int32_t>> batch;
  for (const auto& t : texts) batch.push_back(lm.tokenizer->encode(t, true, false));
  EmbedOptions d;
  d.pooling = p;  // and the default KV type, as the server's
  return embeddings(*lm.model, batch, d);
}

TEST(DecoderEmbeddings, BatchEqualsAloneUnitLengthAndMatchesTheModel) {
  DecoderServer s(Pooling::Last);
  auto c = s.client();
  int status = 0;
  json j = test::post_json(c, "/v1/embeddings", {{"input", {"a", "b"}}, {"model", "test-model"}}, &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "test-model");
  ASSERT_EQ(j["data"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(j["data"][i]["object"], "embedding");
    EXPECT_EQ(j["data"][i]["index"], i);
  }
  const auto both = vectors(j);
  const int tokens = j["usage"]["prompt_tokens"];
  EXPECT_EQ(j["usage"]["total_tokens"], tokens);
  int n_alone = 0;
  for (size_t i = 0; i < 2; ++i) {
    json one = test::post_json(c, "/v1/embeddings", {{"input", i == 0 ? "a" : "b"}}, &status);
    ASSERT_EQ(status, 200) << one.dump();
    EXPECT_EQ(vectors(one)[0], both[i]) << i;
    n_alone += one["usage"]["prompt_tokens"].get<int>();
    double ss = 0;
    for (float x : both[i]) ss += double(x) * x;
    EXPECT_NEAR(std::sqrt(ss), 1.0, 1e-6);
    EXPECT_EQ(both[i].size(), 64u);
  }
  EXPECT_EQ(tokens, n_alone);
  EXPECT_NE(both[0], both[1]);
  EXPECT_EQ(both, reference({"a", "b"}, Pooling::Last));
  // Token ids in, alone and as a list: the same as the text's ids.
  const std::vector<int32_t> ids = s.lm.tokenizer->encode("a", true, false);
  json by_ids = test::post_json(c, "/v1/embeddings", {{"input", ids}}, &status);
  ASSERT_EQ(status, 200) << by_ids.dump();
  EXPECT_EQ(vectors(by_ids)[0], both[0]);
  by_ids = test::post_json(c, "/v1/embeddings", {{"input", json::array({ids, ids})}}, &status);
  ASSERT_EQ(status, 200) << by_ids.dump();
  EXPECT_EQ(vectors(by_ids), (std::vector<std::vector<float>>{both[0], both[0]}));
  // /v1/models reports the width.
  auto r = c.Get("/v1/models/test-model");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["meta"]["n_embd"], 64);
  EXPECT_EQ(json::parse(r->body)["meta"]["isa"], kernel_tier()) << "the kernel tier in use";
}

TEST(DecoderEmbeddings, MeanPoolingDiffersFromLast) {
  const std::vector<std::string> texts = {"Once upon a time", "the cat sat"};
  DecoderServer s(Pooling::Mean);
  auto c = s.client();
  int status = 0;
  json j = test::post_json(c, "/v1/embeddings", {{"input", texts}}, &status);
  ASSERT_EQ(status, 200) << j.dump();
  const auto mean = vectors(j);
  EXPECT_EQ(mean, reference(texts, Pooling::Mean));
  const auto last = reference(texts, Pooling::Last);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_NE(mean[i], last[i]) << i;
}

TEST(DecoderEmbeddings, BadInputIs400NamingTheParameter) {
  DecoderServer s(Pooling::Last);
  auto c = s.client();
  struct Case {
    std::string body;
    int status;
    std::string param;
  };
  const std::string long_ids = json(std::vector<int>(300, 5)).dump();  // > 256 tokens per sequence
  const Case cases[] = {
      {R"({"input":5})", 400, "input"},
      {R"({"input":[]})", 400, "input"},
      {R"({"input":[[]]})", 400, "input"},
      {R"({"input":[1,512]})", 400, "input"},
      {R"({"input":[[1,2],[-1]]})", 400, "input"},
      {R"({"input":["ok",{"a":1}]})", 400, "input"},
      {R"({"nope":"x"})", 400, "input"},
      {R"({"input":)" + long_ids + "}", 400, "input"},
      {R"({"input":"x","encoding_format":"hex"})", 400, "encoding_format"},
      {R"({"input":"x","dimensions":8})", 400, "dimensions"},
      {R"({"input":"x","model":"gpt-9"})", 404, "model"},
      {"{oops", 400, ""},
  };
  for (const Case& k : cases) {
    auto r = c.Post("/v1/embeddings", k.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, k.status) << k.body.substr(0, 80) << " -> " << r->body;
    json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object() && e.contains("error")) << r->body;
    if (!k.param.empty())
      EXPECT_EQ(e["error"]["param"], k.param) << k.body.substr(0, 80) << " -> " << r->body;
  }
  // Still serving.
  int status = 0;
  test::post_json(c, "/v1/embeddings", {{"input", "fine"}}, &status);
  EXPECT_EQ(status, 200);
}

// Greedy completions running while embedding requests arrive give the text they give alone, and
// the embeddings are the model's: the two share the model, one forward at a time.
TEST(DecoderEmbeddings, GenerationKeepsWorkingConcurrently) {
  DecoderServer s(Pooling::Last);
  const json completion = {{"prompt", "Once upon a time"}, {"max_tokens", 48}, {"temperature", 0}};
  std::string want;
  {
    auto c = s.client();
    int status = 0;
    json j = test::post_json(c, "/v1/completions", completion, &status);
    ASSERT_EQ(status, 200) << j.dump();
    want = j["choices"][0]["text"];
  }
  const std::vector<std::string> texts = {"Lily and Ben", "a big red ball", "x"};
  const auto want_vecs = reference(texts, Pooling::Last);
  std::atomic<bool> stop{false};
  std::atomic<int> gen_ok{0}, gen_bad{0};
  std::vector<std::thread> gens;
  for (int t = 0; t < 2; ++t)
    gens.emplace_back([&] {  // raw sockets: httplib clients in several threads trip ThreadSanitizer
      while (!stop.load()) {
        const json j = test::post_json_raw(s.port, "/v1/completions", completion.dump());
        if (j.is_object() && j["choices"][0]["text"] == want)
          ++gen_ok;
        else
          ++gen_bad;
      }
    });
  // Embedding requests until there have been at least 20 and the generators have finished at
  // least 4 completions meanwhile.
  auto c = s.client();
  int n_embed = 0;
  for (; n_embed < 20 || gen_ok.load() + gen_bad.load() < 4; ++n_embed) {
    int status = 0;
    json j = test::post_json(c, "/v1/embeddings", {{"input", texts}}, &status);
    EXPECT_EQ(status, 200) << j.dump();
    if (status != 200) break;  // (not ASSERT: the generator threads must be joined)
    EXPECT_EQ(vectors(j), want_vecs) << n_embed;
  }
  stop = true;
  for (auto& g : gens) g.join();
  EXPECT_EQ(gen_bad.load(), 0);
  EXPECT_GE(gen_ok.load(), 4);
}

}  // namespace
}  // namespace ferrum
