// End-to-end tests of the ferrum binary: the bundled model, eval output, and clear errors on bad
// input (one error line, non-zero exit, never a crash).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace ferrum::test {
namespace {

// A single line on stderr starting with "ferrum: error:", containing every needle.
void expect_clean_error(const RunResult& r, std::initializer_list<std::string> needles) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("ferrum: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

TEST(Cli, GreedyFromEmptyPromptReproducesLlama2cGolden) {
  auto r = run_ferrum("run --prompt '' --temperature 0 --max-tokens 200");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string golden = read_text(data_path("models/stories260K/golden_greedy_noprompt_200steps.txt"));
  EXPECT_EQ(r.out, golden + "\n");
}

// `ferrum run` goes through the engine's output path: stop strings end the text before them.
TEST(Cli, RunStopsBeforeAStopString) {
  auto r = run_ferrum("run --prompt '' --temperature 0 --max-tokens 200 --stop ' named' --stop 'zzz'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string golden = read_text(data_path("models/stories260K/golden_greedy_noprompt_200steps.txt"));
  const size_t at = golden.find(" named");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(r.out, golden.substr(0, at) + "\n");
}

// Speculative decoding changes speed, never the greedy text: llama2.c's golden story with prompt
// lookup and with a draft model (the llama2.c checkpoint of the same weights).
TEST(Cli, RunSpeculativeGivesTheGoldenStory) {
  const std::string golden = read_text(data_path("models/stories260K/golden_greedy_noprompt_200steps.txt"));
  const std::string ckpt = data_path("models/stories260K/stories260K.bin");
  for (const std::string& flags :
       std::vector<std::string>{"--spec-ngram", "--spec-ngram --draft-max 8 --draft-fixed",
                                "--draft-model '" + ckpt + "' --draft-max 3"}) {
    auto r = run_ferrum("run --prompt '' --temperature 0 --max-tokens 200 -v " + flags);
    ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_EQ(r.out, golden + "\n") << flags;
    EXPECT_NE(r.err.find("proposed tokens accepted"), std::string::npos) << r.err;
  }
}

TEST(Cli, RunRefusesADraftModelWithAnotherVocabulary) {
  auto r =
      run_ferrum("run --prompt 'Hi' --draft-model '" + data_path("models/qwen2/gguf/qwen2-Q4_0.gguf") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.err.starts_with("ferrum: error: --draft-model ")) << r.err;
  EXPECT_NE(r.err.find("vocabulary"), std::string::npos) << r.err;
  r = run_ferrum("run --prompt 'Hi' --spec-ngram --draft-model '" +
                 data_path("models/stories260K/stories260K.bin") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("choose one proposer"), std::string::npos) << r.err;
}

TEST(Cli, RunWithNoArgumentsPrintsAStory) {
  auto r = run_ferrum("run --max-tokens 64 --seed 7");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(r.out.size(), 100u);
  // The same seed reproduces the same text; another seed (almost surely) does not.
  EXPECT_EQ(run_ferrum("run --max-tokens 64 --seed 7").out, r.out);
  EXPECT_NE(run_ferrum("run --max-tokens 64 --seed 8").out, r.out);
}

TEST(Cli, LlamaCheckpointRunsLikeItsGgufConversion) {
  // tok512.bin sits beside the checkpoint and is found without --tokenizer.
  const std::string ckpt = data_path("models/stories260K/stories260K.bin");
  auto a = run_ferrum("run '" + ckpt + "' --prompt 'Once upon a time' --temperature 0 --max-tokens 40");
  auto b = run_ferrum("run --prompt 'Once upon a time' --temperature 0 --max-tokens 40");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

// The reference is llama.cpp's with an F32 KV cache (tests/data/README.md), hence --kv-type f32.
TEST(Cli, EvalWritesTopkJsonMatchingReference) {
  const std::string dir = temp_dir();
  auto r =
      run_ferrum("eval '" + bundled_model() + "' --prompt 'Once upon a time, there was' --top-k 8 --out " +
                 dir + "/out.json --logits-npy " + dir + "/out.npy --kv-type f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(read_text(dir + "/out.json"));
  EXPECT_EQ(j["tokens"], nlohmann::json({1, 403, 407, 261, 378, 432, 383, 286}));
  EXPECT_EQ(j["k"], 8);
  auto ref = load_npy(data_path("models/stories260K/logits/p2.npy"));
  auto got = load_npy(dir + "/out.npy");
  ASSERT_EQ(got.shape, ref.shape);
  for (size_t i = 0; i < ref.data.size(); ++i) ASSERT_NEAR(got.data[i], ref.data[i], 1e-4) << i;
  for (size_t t = 0; t < 8; ++t) {
    const int top = j["top_ids"][t][0];
    EXPECT_FLOAT_EQ(j["top_logits"][t][0].get<float>(), got.data[t * 512 + top]);
  }
  fs::remove_all(dir);
}

// --- bad input ---------------------------------------------------------------------------

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) { return dir_ + "/" + n; }
  std::string dir_;
};

TEST_F(BadInput, MissingFile) {
  expect_clean_error(run_ferrum("run /nonexistent.gguf"), {"/nonexistent.gguf"});
}

TEST_F(BadInput, ServeChatTemplateFile) {
  expect_clean_error(run_ferrum("serve --port 0 --chat-template-file " + path("none.jinja")),
                     {"--chat-template-file", path("none.jinja")});
  std::ofstream(path("bad.jinja")) << "{% if %}";
  expect_clean_error(run_ferrum("serve --port 0 --chat-template-file " + path("bad.jinja")),
                     {"chat_template:1:"});
}

TEST_F(BadInput, WrongMagic) {
  std::string data = read_text(bundled_model());
  data[0] = 'X';
  std::ofstream(path("m.gguf"), std::ios::binary) << data;
  expect_clean_error(run_ferrum("info '" + path("m.gguf") + "'"), {path("m.gguf"), "magic"});
}

TEST_F(BadInput, TruncatedGguf) {
  const std::string data = read_text(bundled_model());
  for (size_t cut : {size_t(10), size_t(100), size_t(5000), data.size() / 2, data.size() - 1}) {
    std::ofstream(path("t.gguf"), std::ios::binary) << data.substr(0, cut);
    auto r = run_ferrum("run '" + path("t.gguf") + "' --prompt hi --max-tokens 1");
    expect_clean_error(r, {path("t.gguf")});
  }
}

TEST_F(BadInput, UnknownArchitectureAndMissingTensor) {
  auto src = gguf::File::open(bundled_model());
  {
    gguf::Writer w;
    w.copy_metadata_from(*src);
    w.set_string("general.architecture", "gpt-neo-9000");
    for (const auto& t : src->tensors()) w.add_tensor(t);
    w.write(path("arch.gguf"));
  }
  expect_clean_error(run_ferrum("run '" + path("arch.gguf") + "' --prompt hi"),
                     {"unknown architecture", "gpt-neo-9000"});
  {
    gguf::Writer w;
    w.copy_metadata_from(*src);
    for (const auto& t : src->tensors())
      if (t.name != "blk.3.ffn_up.weight") w.add_tensor(t);
    w.write(path("missing.gguf"));
  }
  expect_clean_error(run_ferrum("run '" + path("missing.gguf") + "' --prompt hi"),
                     {"blk.3.ffn_up.weight", "missing"});
}

TEST_F(BadInput, TensorShapeDoesNotMatchModel) {
  auto src = gguf::File::open(bundled_model());
  gguf::Writer w;
  w.copy_metadata_from(*src);
  for (const auto& t : src->tensors()) {
    if (t.name == "blk.0.attn_q.weight") {
      // Same bytes, transposed-looking shape that does not fit the model.
      w.add_tensor(t.name, t.type, {t.ne[0] / 2, t.ne[1] * 2}, t.data, t.nbytes);
    } else {
      w.add_tensor(t);
    }
  }
  w.write(path("shape.gguf"));
  expect_clean_error(run_ferrum("run '" + path("shape.gguf") + "' --prompt hi"),
                     {"blk.0.attn_q.weight", "shape"});
}

TEST_F(BadInput, ConfigFieldOfWrongType) {
  fs::create_directories(path("hf"));
  std::ofstream(path("hf/config.json"))
      << R"({"model_type": "llama", "hidden_size": "256", "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 512, "intermediate_size": 512})";
  expect_clean_error(run_ferrum("info '" + path("hf") + "'"), {"hidden_size"});
}

TEST_F(BadInput, BadSamplingParameter) {
  expect_clean_error(run_ferrum("run --prompt hi --top-p 1.5"), {"--top-p", "above 0 and at most 1", "1.5"});
}

// `ferrum info` reports the KV memory per layer kind: the Gemma 3 fixture has 1 global layer and 5
// with a 16-token window (2 KV heads of 64: 512 bytes of f16 K+V per position and layer).
TEST(Info, KvMemoryPerLayerKind) {
  const std::string dir = temp_dir() + "/gemma3-hf";
  fs::create_directories(dir);
  fs::copy_file(data_path("families/gemma3/hf/config.json"), dir + "/config.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(unxz("families/gemma3/hf/model.safetensors"), dir + "/model.safetensors",
                fs::copy_options::overwrite_existing);
  const RunResult r = run_ferrum("info --json '" + dir + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kv_layers"]["full"], 1);
  EXPECT_EQ(j["kv_layers"]["windowed"], 5);
  EXPECT_EQ(j["kv_layers"]["window"], 16);
  const auto& s = j["kv_sequence_bytes"];
  EXPECT_EQ(s["tokens"], 32768);
  // The global layer holds all 32768 positions; a windowed one its window and the 64-token
  // rollback from anywhere in a 16-token block, and the block being filled: 6 blocks.
  EXPECT_EQ(s["bytes"], 32768 * 512 + 5 * 96 * 512);
  EXPECT_EQ(s["every_layer_full_bytes"], 6 * 32768 * 512);
  const RunResult text = run_ferrum("info '" + dir + "'");
  EXPECT_NE(text.out.find("5 keep only their 16-token window"), std::string::npos) << text.out;
}

// llama-quantize's type flags: the types land where they say; a bad value is one error line.
TEST(Quantize, TypeFlags) {
  const std::string in = unxz("models/llama/gguf/llama-F32.gguf");
  const std::string out = temp_dir() + "/cli-flags.gguf";
  auto r = run_ferrum(
      "quantize '" + in + "' '" + out +
      "' Q4_0 --tensor-type 'ffn_(up|gate)=q5_k' --output-tensor-type q8_0 --token-embedding-type f16 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = gguf::File::open(out);
  EXPECT_EQ(f->tensor("blk.1.ffn_up.weight").type, DType::Q5_K);
  EXPECT_EQ(f->tensor("blk.1.ffn_down.weight").type, DType::Q4_0);
  EXPECT_EQ(f->tensor("output.weight").type, DType::Q8_0);
  EXPECT_EQ(f->tensor("token_embd.weight").type, DType::F16);
  r = run_ferrum("quantize '" + in + "' '" + out + "' Q4_0 --pure --leave-output-tensor -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  f = gguf::File::open(out);
  EXPECT_EQ(f->tensor("output.weight").type, DType::F32);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight").type, DType::Q4_0);
  expect_clean_error(run_ferrum("quantize '" + in + "' '" + out + "' Q4_0 --tensor-type attn_v -q"),
                     {"--tensor-type: expects PATTERN=TYPE", "got 'attn_v'"});
  expect_clean_error(run_ferrum("quantize '" + in + "' '" + out + "' Q4_0 --output-tensor-type q3 -q"),
                     {"--output-tensor-type: expects a type ferrum writes (F32, F16", "got 'q3'"});
  std::filesystem::remove(out);
}

// `ferrum quantize --imatrix`: the low i-quant presets refuse without an importance matrix (one
// error line naming the preset, the tensor and the flag), and write the file with one.
TEST(Quantize, ImatrixFlag) {
  const std::string in = unxz("models/llama/gguf/llama-F32.gguf");
  const std::string out = temp_dir() + "/cli-iq2.gguf";
  expect_clean_error(run_ferrum("quantize '" + in + "' '" + out + "' IQ2_XXS -q"),
                     {"preset IQ2_XXS writes tensor 'blk.0.attn_q.weight' as IQ2_XXS", "--imatrix FILE"});
  expect_clean_error(run_ferrum("quantize '" + in + "' '" + out + "' IQ2_XXS --imatrix /nonexistent.gguf -q"),
                     {"/nonexistent.gguf: cannot open the importance matrix file"});
  auto r = run_ferrum("quantize '" + in + "' '" + out + "' IQ2_XXS --imatrix '" +
                      data_path("models/llama/imatrix.gguf") + "' -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto g = run_ferrum("run -m '" + out + "' --prompt 'Once' --temperature 0 --max-tokens 4");
  EXPECT_EQ(g.exit_code, 0) << g.err;
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace ferrum::test
