// Importance matrices in llama-imatrix's two formats: the GGUF fixture (sums / counts per matrix;
// values checked against llama.cpp's gguf-py reading of the same file) and the older .dat format,
// written here byte by byte; bad files are refused naming what is wrong.
#include "formats/imatrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "formats/gguf_writer.h"
#include "test_util.h"

namespace ferrum {
namespace {

TEST(Imatrix, ReadsLlamaImatrixGguf) {
  const ImportanceMatrix m = read_imatrix(test::data_path("models/llama/imatrix.gguf"));
  EXPECT_EQ(m.entries.size(), 14u);  // 2 layers x q, k, v, output, gate, up, down
  EXPECT_EQ(m.chunk_count, 40);
  ASSERT_EQ(m.datasets.size(), 1u);
  // in_sum2 / counts (10240 tokens), as gguf-py reads the file.
  const float* w = m.find("blk.0.ffn_gate.weight", 256);
  ASSERT_NE(w, nullptr);
  const float expected[4] = {1.1673739f, 1.0113413f, 0.8483902f, 1.0508459f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(w[i], expected[i], 1e-6f) << i;
  ASSERT_NE(m.find("blk.1.ffn_down.weight", 512), nullptr);
  EXPECT_EQ(m.find("token_embd.weight", 256), nullptr);  // no entry: nullptr
  const std::string msg = test::error_of([&] { m.find("blk.0.ffn_gate.weight", 512); });
  EXPECT_NE(msg.find("entry 'blk.0.ffn_gate.weight' has 256 values, the tensor has 512 columns x 1 matrices"),
            std::string::npos)
      << msg;
}

// A .dat file: entries of (name, calls, values), then the chunk count and dataset name.
struct DatFile {
  std::string bytes;
  void i32(int32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); }
  void f32(float v) { bytes.append(reinterpret_cast<const char*>(&v), 4); }
  void entry(const std::string& name, int32_t calls, const std::vector<float>& v) {
    i32(static_cast<int32_t>(name.size()));
    bytes += name;
    i32(calls);
    i32(static_cast<int32_t>(v.size()));
    for (float x : v) f32(x);
  }
  std::string write(const std::string& name) const {
    const std::string path = test::temp_dir() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST(Imatrix, ReadsTheDatFormat) {
  DatFile f;
  f.i32(2);
  f.entry("blk.0.attn_q.weight", 4, {4.0f, 8.0f});  // sums per call times the calls: divided by 4
  f.entry("blk.0.ffn_down_exps.weight", 0, {1.0f, 2.0f, 3.0f, 4.0f});
  f.i32(7);
  f.i32(4);
  f.bytes += "wiki";
  const ImportanceMatrix m = read_imatrix(f.write("a.dat"));
  const float* q = m.find("blk.0.attn_q.weight", 2);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q[0], 1.0f);
  EXPECT_EQ(q[1], 2.0f);
  const float* e = m.find("blk.0.ffn_down_exps.weight", 2, 2);  // two experts of 2 columns
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e[3], 4.0f);  // no calls: kept as stored
  EXPECT_EQ(m.chunk_count, 7);
  ASSERT_EQ(m.datasets.size(), 1u);
  EXPECT_EQ(m.datasets[0], "wiki");
}

TEST(Imatrix, BadFilesAreRefusedNamingTheProblem) {
  auto error = [](const DatFile& f, const std::string& name) {
    const std::string path = f.write(name);
    return test::error_of([&] { read_imatrix(path); });
  };
  DatFile truncated;
  truncated.i32(1);
  truncated.entry("blk.0.attn_q.weight", 1, {1.0f, 2.0f});
  truncated.bytes.resize(truncated.bytes.size() - 3);
  EXPECT_NE(error(truncated, "t.dat").find("bad value count"), std::string::npos)
      << error(truncated, "t.dat");
  DatFile nan;
  nan.i32(1);
  nan.entry("blk.0.attn_k.weight", 1, {1.0f, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_NE(error(nan, "n.dat").find("entry 'blk.0.attn_k.weight' has a bad value nan at 1"),
            std::string::npos)
      << error(nan, "n.dat");
  DatFile empty;
  empty.i32(0);
  EXPECT_NE(error(empty, "e.dat").find("has no entries"), std::string::npos);
  DatFile long_name;
  long_name.i32(1);
  long_name.i32(1 << 30);
  EXPECT_NE(error(long_name, "l.dat").find("bad name length 1073741824"), std::string::npos)
      << error(long_name, "l.dat");
  EXPECT_NE(test::error_of([] { read_imatrix("/nonexistent/imatrix.gguf"); }).find("cannot open"),
            std::string::npos);

  // GGUF: a sum without its counts, and a tensor that is neither.
  gguf::Writer w;
  const float sums[2] = {1.0f, 2.0f};
  w.add_tensor("blk.0.attn_q.weight.in_sum2", DType::F32, {2, 1}, sums, sizeof(sums));
  const std::string path = test::temp_dir() + "/nocounts.gguf";
  w.write(path);
  std::string msg = test::error_of([&] { read_imatrix(path); });
  EXPECT_NE(msg.find("entry 'blk.0.attn_q.weight' lacks its counts"), std::string::npos) << msg;
  gguf::Writer w2;
  w2.add_tensor("blk.0.attn_q.weight", DType::F32, {2, 1}, sums, sizeof(sums));
  w2.write(path);
  msg = test::error_of([&] { read_imatrix(path); });
  EXPECT_NE(msg.find("tensor 'blk.0.attn_q.weight' is not part of an importance matrix"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace ferrum
