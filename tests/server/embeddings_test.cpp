// POST /v1/embeddings on an encoder (BERT fixture), over loopback.
#include "server/embeddings.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "loading/loader.h"
#include "server/server.h"
#include "test_util.h"

namespace ferrum {
namespace {

using json = nlohmann::json;

std::vector<float> from_base64(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) break;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

TEST(ServerEmbeddings, BertVectorsMatchTheModelAndDecodersRefuse) {
  ModelOptions o;
  o.n_threads = 2;
  LoadedModel b = load_model(test::data_path("models/bert/gguf/bert-Q8_0.gguf"), o);
  LoadedModel ref = load_model(test::data_path("models/bert/gguf/bert-Q8_0.gguf"), o);
  server::Embedder emb(*b.model, *b.tokenizer);
  server::ServerOptions so;
  so.port = 0;
  so.model_name = "bert-test";
  server::Server srv(nullptr, &emb, so);
  const int port = srv.start();
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);

  const std::vector<std::string> texts = {"hello world", "the quick brown fox"};
  std::vector<std::vector<int32_t>> batch;
  for (const auto& t : texts) batch.push_back(ref.tokenizer->encode(t, true, false));
  const auto want = embeddings(*ref.model, batch,
                               EmbedOptions{ref.model->config().pooling, ref.model->config().normalize, {}});

  auto r =
      c.Post("/v1/embeddings", json{{"input", texts}, {"model", "bert-test"}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["data"].size(), 2u);
  int n_tokens = 0;
  for (const auto& ids : batch) n_tokens += static_cast<int>(ids.size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], n_tokens);
  for (size_t i = 0; i < 2; ++i) {
    const auto got = j["data"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), want[i].size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_FLOAT_EQ(got[k], want[i][k]);
  }
  // base64: the same floats, little-endian.
  r = c.Post("/v1/embeddings", json{{"input", texts[1]}, {"encoding_format", "base64"}}.dump(),
             "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(from_base64(json::parse(r->body)["data"][0]["embedding"].get<std::string>()), want[1]);
  // Errors.
  for (const std::string& bad :
       {std::string(R"({"input":5})"), std::string(R"({"input":"x","encoding_format":"hex"})"),
        std::string(R"({"input":[[1,99999999]]})"), std::string("{oops")}) {
    r = c.Post("/v1/embeddings", bad, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad << " -> " << r->body;
    EXPECT_TRUE(json::parse(r->body).contains("error")) << r->body;
  }
  r = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "model_not_supported");
  srv.stop();
}

}  // namespace
}  // namespace ferrum
