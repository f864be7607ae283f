// BERT encoder tests against the shared fixtures (tests/data/models/bert, copied from
// shared/fixtures/bert): pooled embeddings vs the exact-erf float64 references (tight) and vs
// llama.cpp's tanh-GELU outputs (loose), batching, tokenization, HF directories, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine.h"
#include "ferrum/embeddings.h"
#include "ferrum/error.h"
#include "model_test_util.h"

namespace ferrum::test::bert_test {
namespace {

namespace fs = std::filesystem;
const std::vector<std::string> kTypes = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"};

// tests/data/models/bert/<sub> copied under /tmp with model.safetensors decompressed (the
// sentence-transformers layout has a 1_Pooling subdirectory).
std::string bert_hf_dir(const std::string& sub) {
  const fs::path src = data_path("models/bert/" + sub);
  const fs::path dst = fs::temp_directory_path() / "ferrum-test-cache" / "bert" / sub;
  fs::create_directories(dst / "1_Pooling");
  for (const char* f :
       {"config.json", "modules.json", "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json"})
    copy_file_atomic((src / f).string(), (dst / f).string());
  copy_file_atomic(unxz("models/bert/" + sub + "/model.safetensors"), (dst / "model.safetensors").string());
  return dst.string();
}

std::string gguf(const std::string& type) {
  return model_file("bert", "gguf/bert-" + type + ".gguf");
}

std::vector<std::vector<int32_t>> sentence_ids() {
  auto ref = load_json(data_path("models/bert/reference.json"));
  std::vector<std::vector<int32_t>> out;
  for (const auto& s : ref["sentences"]) out.push_back(s["token_ids"].get<std::vector<int32_t>>());
  return out;
}
std::vector<std::string> sentence_texts() {
  auto ref = load_json(data_path("models/bert/reference.json"));
  std::vector<std::string> out;
  for (const auto& s : ref["sentences"]) out.push_back(s["text"].get<std::string>());
  return out;
}

LoadedModel open_bert(const std::string& path, Precision p, int threads = 2) {
  ModelOptions o;
  o.precision = p;
  o.n_threads = threads;
  return load_model(path, o);
}

// Final hidden states of every token, sentences concatenated: one forward with Want::All.
std::vector<float> token_states(Model& m, const std::vector<std::vector<int32_t>>& ids) {
  auto kv = KvCache::for_model(m, KvOptions{});
  std::vector<SeqInput> items;
  size_t rows = 0;
  for (size_t s = 0; s < ids.size(); ++s) {
    SeqInput in;
    in.seq = static_cast<int>(s);
    in.tokens = ids[s];
    in.logits = Want::None;
    in.hidden = Want::All;
    items.push_back(in);
    rows += ids[s].size();
  }
  std::vector<float> out(rows * m.config().n_embd);
  m.forward(*kv, items, ForwardOut{nullptr, out.data()});
  EXPECT_EQ(kv->n_layer(), 0) << "an encoder's cache holds nothing";
  return out;
}

double max_diff(const std::vector<std::vector<float>>& got, const nlohmann::json& ref) {
  double m = 0;
  EXPECT_EQ(got.size(), ref.size());
  for (size_t s = 0; s < got.size() && s < ref.size(); ++s) {
    EXPECT_EQ(got[s].size(), ref[s].size());
    for (size_t i = 0; i < got[s].size(); ++i)
      m = std::max(m, std::fabs(got[s][i] - ref[s][i].get<double>()));
  }
  return m;
}

struct Variant {
  const char* key;
  Pooling pooling;
  bool normalize;
};
const Variant kVariants[] = {{"mean_raw", Pooling::Mean, false},
                             {"mean_normalized", Pooling::Mean, true},
                             {"cls_raw", Pooling::Cls, false},
                             {"cls_normalized", Pooling::Cls, true}};

TEST(Bert, EveryTypeExactPathMatchesFloat64ErfReference) {
  const auto ids = sentence_ids();
  for (const std::string& type : kTypes) {
    auto b = open_bert(gguf(type), Precision::Exact);
    auto ref = load_json(model_file("bert", "embeddings/" + type + ".json"));
    for (const Variant& v : kVariants) {
      const double d = max_diff(embeddings(*b.model, ids, EmbedOptions{v.pooling, v.normalize, {}}),
                                ref["exact_f64_same_weights"][v.key]);
      std::printf("%s %s exact vs float64 erf: %.3g\n", type.c_str(), v.key, d);
      // Raw values reach |3.5|; the reference is float64 over the same (dequantized) weights.
      EXPECT_LE(d, v.normalize ? 1e-6 : 1e-5) << type << " " << v.key;
    }
  }
}

TEST(Bert, F32MatchesHuggingFaceNumpyReference) {
  auto ref = load_json(model_file("bert", "embeddings/hf_numpy_erf_gelu.json"));
  const auto ids = sentence_ids();
  for (const std::string& path : {gguf("F32"), bert_hf_dir("hf"), bert_hf_dir("hf-bf16")}) {
    // The fast path rounds activations to BF16 for BF16 weights (as llama.cpp): exact path only.
    const bool bf16 = path.find("hf-bf16") != std::string::npos;
    for (Precision p : {Precision::Exact, Precision::Fast}) {
      if (bf16 && p == Precision::Fast) continue;
      auto b = open_bert(path, p);
      for (const Variant& v : kVariants) {
        const double d =
            max_diff(embeddings(*b.model, ids, EmbedOptions{v.pooling, v.normalize, {}}), ref[v.key]);
        EXPECT_LE(d, v.normalize ? 2e-6 : 2e-5) << path << " " << v.key;
      }
    }
  }
}

TEST(Bert, EveryTypeFastPathNearLlamaCppTanhGelu) {
  // llama.cpp uses tanh-GELU through an F16 table (4e-4 mean / 1e-3 CLS from erf on F32) and
  // rounds activations for quantized weights (<= 0.019 raw from exact math on these files).
  const auto ids = sentence_ids();
  for (const std::string& type : kTypes) {
    auto b = open_bert(gguf(type), Precision::Fast);
    auto ref = load_json(model_file("bert", "embeddings/" + type + ".json"));
    const bool half = type == "F32" || type == "F16";
    for (const Variant& v : kVariants) {
      const double d =
          max_diff(embeddings(*b.model, ids, EmbedOptions{v.pooling, v.normalize, {}}), ref[v.key]);
      std::printf("%s %s fast vs llama.cpp: %.3g\n", type.c_str(), v.key, d);
      const double tol = half ? 2e-3 : type == "BF16" ? 0.015 : 0.06;
      EXPECT_LE(d, v.normalize ? tol / 8 : tol) << type << " " << v.key;
    }
  }
}

TEST(Bert, BatchEqualsOneAtATime) {
  const auto ids = sentence_ids();
  for (const std::string& type : {"F32", "Q8_0"}) {
    auto b = open_bert(gguf(type), Precision::Fast);
    for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
      auto all = embeddings(*b.model, ids, EmbedOptions{p, true, {}});
      double m = 0;
      for (size_t s = 0; s < ids.size(); ++s) {
        auto one = embeddings(*b.model, {ids[s]}, EmbedOptions{p, true, {}});
        for (size_t i = 0; i < one[0].size(); ++i) m = std::max(m, double(std::fabs(one[0][i] - all[s][i])));
      }
      EXPECT_LE(m, 1e-6) << type << " " << pooling_name(p);
    }
  }
}

TEST(Bert, LastPoolingAndTokenStatesMatchLlamaCppTokenLevel) {
  auto ref = load_npy(model_file("bert", "embeddings/F32_token_level.npy"));
  const auto ids = sentence_ids();
  auto b = open_bert(gguf("F32"), Precision::Exact);
  auto states = token_states(*b.model, ids);
  ASSERT_EQ(static_cast<int64_t>(states.size()), ref.shape[0] * ref.shape[1]);
  double m = 0;
  for (size_t i = 0; i < states.size(); ++i) m = std::max(m, double(std::fabs(states[i] - ref.data[i])));
  EXPECT_LE(m, 5e-3) << "token level vs llama.cpp (tanh GELU)";
  auto last = embeddings(*b.model, ids, EmbedOptions{Pooling::Last, false, {}});
  int64_t row = 0;
  const int64_t d = b.model->config().n_embd;
  for (size_t s = 0; s < ids.size(); ++s) {
    row += ids[s].size();
    for (int64_t c = 0; c < d; ++c) EXPECT_EQ(last[s][c], states[(row - 1) * d + c]);
  }
}

TEST(Bert, TokenizerAndDefaultsFromGgufAndHfDir) {
  const auto ids = sentence_ids();
  const auto texts = sentence_texts();
  for (const std::string& path : {gguf("Q8_0"), bert_hf_dir("hf")}) {
    auto b = open_bert(path, Precision::Fast);
    EXPECT_EQ(b.tokenizer->kind(), "wordpiece");
    for (size_t s = 0; s < texts.size(); ++s)
      EXPECT_EQ(b.tokenizer->encode(texts[s], true, false), ids[s]) << path;
    EXPECT_EQ(b.model->config().pooling, Pooling::Mean) << path;
    EXPECT_EQ(b.model->config().n_ctx_train, 512);
  }
  EXPECT_FALSE(open_bert(gguf("F32"), Precision::Fast).model->config().normalize);
  EXPECT_TRUE(open_bert(bert_hf_dir("hf"), Precision::Fast).model->config().normalize)
      << "2_Normalize module";
}

// Rewrites a safetensors file with every tensor name prefixed by "bert." (as BertForXxx
// checkpoints store them) and 1_Pooling switched to CLS.
TEST(Bert, HfDirWithBertPrefixAndClsPooling) {
  const fs::path src = bert_hf_dir("hf");
  const fs::path dir = fs::path(temp_dir()) / "bert-prefixed";
  fs::create_directories(dir / "1_Pooling");
  for (const char* f : {"config.json", "vocab.txt", "tokenizer_config.json", "modules.json"})
    fs::copy_file(src / f, dir / f, fs::copy_options::overwrite_existing);
  auto pool = load_json((src / "1_Pooling/config.json").string());
  pool["pooling_mode_mean_tokens"] = false;
  pool["pooling_mode_cls_token"] = true;
  std::ofstream(dir / "1_Pooling/config.json") << pool.dump(2);
  std::ifstream in(src / "model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  nlohmann::json renamed;
  for (auto& [k, v] : header.items()) renamed[k == "__metadata__" ? k : "bert." + k] = v;
  std::string h = renamed.dump();
  while ((8 + h.size()) % 8) h += ' ';
  const uint64_t hn = h.size();
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&hn), 8);
  out << h << bytes.substr(8 + n);
  out.close();

  auto b = open_bert(dir.string(), Precision::Exact);
  EXPECT_EQ(b.model->config().pooling, Pooling::Cls);
  auto ref = load_json(model_file("bert", "embeddings/hf_numpy_erf_gelu.json"));
  EXPECT_LE(max_diff(embeddings(*b.model, sentence_ids(), EmbedOptions{Pooling::Cls, true, {}}),
                     ref["cls_normalized"]),
            2e-6);
}

TEST(Bert, BadInput) {
  auto b = open_bert(gguf("Q8_0"), Precision::Fast);
  std::vector<int32_t> long_ids(513, 100);
  std::string msg = error_of([&] {
    embeddings(*b.model, {{2, 3}, long_ids}, EmbedOptions{Pooling::Mean, false, {}});
  });
  EXPECT_NE(msg.find("513 tokens"), std::string::npos) << msg;
  EXPECT_NE(msg.find("position table (512"), std::string::npos) << msg;
  long_ids.resize(512);
  EXPECT_NO_THROW(embeddings(*b.model, {long_ids}, EmbedOptions{Pooling::Mean, false, {}}));
  msg = error_of([&] { embeddings(*b.model, {{2, 3}, {}}, EmbedOptions{Pooling::Mean, false, {}}); });
  EXPECT_NE(msg.find("input 1"), std::string::npos) << msg;
  msg = error_of([&] { embeddings(*b.model, {{2, 1641}}, EmbedOptions{Pooling::Mean, false, {}}); });
  EXPECT_NE(msg.find("1641"), std::string::npos) << msg;
  msg = error_of([] { parse_pooling("max"); });
  EXPECT_NE(msg.find("'max'"), std::string::npos) << msg;
  // An encoder gives hidden states only: no logits, no input rows, no generation; a decoder has
  // no CLS token.
  auto kv = KvCache::for_model(*b.model, KvOptions{});
  const std::vector<int32_t> two = {2, 3};
  SeqInput in;
  in.tokens = two;
  msg = error_of([&] { b.model->forward(*kv, std::span(&in, 1), ForwardOut{}); });
  EXPECT_NE(msg.find("not logits"), std::string::npos) << msg;
  std::vector<float> row(b.model->config().n_embd);
  msg = error_of([&] { b.model->embed_tokens(two, row.data()); });
  EXPECT_NE(msg.find("encoder"), std::string::npos) << msg;
  msg = error_of([&] { Engine e(*b.model, *b.tokenizer, EngineOptions{}); });
  EXPECT_NE(msg.find("encoder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ferrum embed"), std::string::npos) << msg;
  LoadedModel decoder = load_model(model_file("qwen3moe", "gguf/qwen3moe-Q4_0.gguf"), ModelOptions{});
  msg = error_of([&] { embeddings(*decoder.model, {two}, EmbedOptions{Pooling::Cls, false, {}}); });
  EXPECT_NE(msg.find("CLS"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ferrum::test::bert_test

namespace ferrum::test::bert_test {
namespace {

TEST(Bert, InfoPathAndDefaults) {
  // open_model_files (what `ferrum info` uses) reads BERT from both formats.
  for (const std::string& path : {gguf("Q4_K_M"), bert_hf_dir("hf-bf16")}) {
    ModelFiles f = open_model_files(path);
    EXPECT_EQ(f.config.arch, Arch::Bert) << path;
    EXPECT_EQ(f.config.n_embd, 128);
    EXPECT_EQ(f.config.n_layer, 2);
    EXPECT_TRUE(f.weights.find("blk.1.layer_output_norm.bias")) << path;
  }
  BertDefaults g = bert_defaults(gguf("F32")), h = bert_defaults(bert_hf_dir("hf"));
  EXPECT_EQ(g.pooling, Pooling::Mean);
  EXPECT_FALSE(g.normalize);
  EXPECT_EQ(h.pooling, Pooling::Mean);
  EXPECT_TRUE(h.normalize);
}

}  // namespace
}  // namespace ferrum::test::bert_test
