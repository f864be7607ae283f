// The .npy module: float32 arrays round-trip; NumPy's own files read; every bad file is a
// ferrum::Error naming the file and the problem.
#include "formats/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace ferrum::npy {
namespace {
using test::error_of;
using test::npy_bytes;

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

class Npy : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string put(const std::string& bytes) {
    const std::string p = dir_ + "/x.npy";
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  // The error reading these bytes; it must name the file.
  std::string bad(const std::string& bytes) {
    const std::string p = put(bytes);
    const std::string e = error_of([&] { read_f32(p); });
    EXPECT_NE(e.find(p), std::string::npos) << e;
    return e;
  }
  std::string dir_;
};

TEST_F(Npy, RoundTripsAndReadsNumpyVariants) {
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
  write_f32(dir_ + "/a.npy", v, 2, 3);
  Array a = read_f32(dir_ + "/a.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, v);
  // The header NumPy writes is padded so the data starts at a multiple of 64.
  std::ifstream f(dir_ + "/a.npy", std::ios::binary);
  f.seekg(0, std::ios::end);
  EXPECT_EQ((static_cast<size_t>(f.tellg()) - v.size() * 4) % 64, 0u);
  // 1-D, 0-d, 3-D, format 2.0, double quotes, no trailing comma.
  a = read_f32(put(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", floats({1, 2}))));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  a = read_f32(put(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats({5}))));
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, (std::vector<float>{5}));
  a = read_f32(
      put(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1), }", floats({1, 2}), 2)));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2, 1}));
  a = read_f32(put(npy_bytes(R"({"shape": (0, 4), "fortran_order": False, "descr": "<f4"})", "")));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(a.data.empty());
  EXPECT_EQ(shape_string(std::vector<int64_t>{3}), "(3,)");
  EXPECT_EQ(shape_string(std::vector<int64_t>{3, 64}), "(3, 64)");
}

TEST_F(Npy, BadFilesNameTheProblem) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_NE(error_of([&] { read_f32(dir_ + "/missing.npy"); }).find("missing.npy: cannot open"),
            std::string::npos);
  EXPECT_NE(bad("").find("not a .npy file"), std::string::npos);
  EXPECT_NE(bad("PK\x03\x04 a zip file, not npy").find("bad magic"), std::string::npos);
  std::string v9 = npy_bytes(ok, floats({1, 2}));
  v9[6] = 9;
  EXPECT_NE(bad(v9).find("version 9.0"), std::string::npos);
  EXPECT_NE(bad(npy_bytes(ok, floats({1, 2})).substr(0, 30)).find("truncated .npy header"),
            std::string::npos);
  EXPECT_NE(bad(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0')))
                .find("dtype '<f8' is not little-endian float32"),
            std::string::npos);
  EXPECT_NE(bad(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", floats({1, 2})))
                .find("dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(bad(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }", floats({1, 2})))
                .find("Fortran order"),
            std::string::npos);
  EXPECT_NE(bad(npy_bytes(ok, floats({1}))).find("needs 8 bytes of float32 data, the file has 4"),
            std::string::npos);
  EXPECT_NE(bad(npy_bytes(ok, floats({1, 2, 3}))).find("the file has 12"), std::string::npos);
  for (const char* h : {"{'descr': '<f4', 'fortran_order': False}",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", "'descr': '<f4'",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) } trailing",
                        "{'descr: '<f4', 'fortran_order': False, 'shape': (2,), }"})
    EXPECT_NE(bad(npy_bytes(h, floats({1, 2}))).find("malformed .npy header"), std::string::npos) << h;
  EXPECT_NE(
      bad(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""))
          .find("too large"),
      std::string::npos);
}

}  // namespace
}  // namespace ferrum::npy
