// Corrupt GGUF files built from a small valid one: every problem must be a ferrum::Error whose
// message names it (never a crash, never a huge allocation).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats_test_util.h"
#include "test_util.h"

namespace ferrum::gguf {
namespace {
using test::error_of;

class GgufBad : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("alpha", 7);
    w.set_u32("bravo", 8);
    w.set_string_array("tokens", {"a", "bb", "ccc"});
    w.set_f32_array("scores", {1, 2, 3});
    f32_.assign(4 * 3, 1.0f);
    q8_.assign(34 * 2, 0);
    w.add_tensor("t.one", DType::F32, {4, 3}, f32_.data(), f32_.size() * 4);
    w.add_tensor("t.two", DType::Q8_0, {64}, q8_.data(), q8_.size());
    w.write(dir_ + "/good.gguf");
    good_ = test::read_file(dir_ + "/good.gguf");
    ASSERT_NO_THROW(File::open(dir_ + "/good.gguf"));
  }

  // Offset of a length-prefixed GGUF string with this text (the u64 length field).
  size_t string_at(const std::string& s) const {
    std::string needle(8, '\0');
    const uint64_t n = s.size();
    std::memcpy(needle.data(), &n, 8);
    needle += s;
    const size_t p = good_.find(needle);
    EXPECT_NE(p, std::string::npos) << s;
    return p;
  }
  // Offset of the field just after a tensor name (n_dims).
  size_t tensor_info(const std::string& name) const { return string_at(name) + 8 + name.size(); }

  template <typename T>
  std::string patched(size_t off, T v, std::string base = "") const {
    std::string b = base.empty() ? good_ : base;
    std::memcpy(b.data() + off, &v, sizeof(T));
    return b;
  }
  std::string open_error(const std::string& bytes) {
    const std::string p = scratch("bad.gguf");
    std::ofstream(p, std::ios::binary) << bytes;
    return error_of([&] { File::open(p); });
  }

  // A scratch file for the many corrupt variants: in RAM when /dev/shm exists (much faster to
  // rewrite thousands of times than a disk-backed /tmp).
  std::string scratch(const std::string& name) const {
    static const bool shm = std::filesystem::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0;
    return shm ? fmt::format("/dev/shm/ferrum-test-{}-{}", getpid(), name) : dir_ + "/" + name;
  }
  void TearDown() override {
    std::filesystem::remove(scratch("bad.gguf"));
    std::filesystem::remove(scratch("fuzz.gguf"));
  }

  std::string dir_, good_;
  std::vector<float> f32_;
  std::vector<uint8_t> q8_;
};

#define EXPECT_MSG(bytes, sub)                                       \
  do {                                                               \
    const std::string e_ = open_error(bytes);                        \
    EXPECT_NE(e_.find(sub), std::string::npos) << "message: " << e_; \
    EXPECT_NE(e_.find("bad.gguf"), std::string::npos) << e_;         \
  } while (0)

TEST_F(GgufBad, TruncatedAtEveryOffset) {
  size_t truncated = 0, tensor_errors = 0;
  // Every cut before the end of the last tensor's data (the padding after it is optional).
  const auto f = File::open(dir_ + "/good.gguf");
  const size_t end = f->tensors().back().data + f->tensors().back().nbytes - f->mapping().data();
  for (size_t n = 0; n < end; ++n) {
    const std::string e = open_error(good_.substr(0, n));
    ASSERT_NE(e, "(no error)") << "cut at " << n;
    if (e.find("truncated") != std::string::npos) ++truncated;
    if (e.find("needs") != std::string::npos && e.find("but the file has only") != std::string::npos)
      ++tensor_errors;
  }
  EXPECT_GT(truncated, 100u);     // cut inside the header / metadata / tensor infos
  EXPECT_GT(tensor_errors, 10u);  // cut inside the tensor data
  EXPECT_MSG(good_.substr(0, 2), "not a GGUF file");
  EXPECT_MSG(good_.substr(0, 6),
             "truncated file: version at offset 4 needs 4 bytes, but the file has only 6");
}

TEST_F(GgufBad, MagicAndVersion) {
  EXPECT_MSG("GGML" + good_.substr(4), "bad magic 47 47 4d 4c at offset 0");
  EXPECT_MSG(patched<uint32_t>(4, 1), "GGUF version 1 is not supported");
  EXPECT_MSG(patched<uint32_t>(4, 4), "unsupported GGUF version 4 at offset 4");
  EXPECT_MSG(patched<uint32_t>(4, 0x03000000), "big-endian");
  // Version 2 has the same layout as 3 (64-bit counts) and is accepted.
  const std::string p = dir_ + "/v2.gguf";
  std::ofstream(p, std::ios::binary) << patched<uint32_t>(4, 2);
  EXPECT_EQ(File::open(p)->version(), 2u);
}

TEST_F(GgufBad, AbsurdCounts) {
  EXPECT_MSG(patched<uint64_t>(8, 1ull << 60), "tensor count 1152921504606846976 at offset 8 is impossible");
  EXPECT_MSG(patched<uint64_t>(16, 1ull << 60),
             "metadata count 1152921504606846976 at offset 16 is impossible");
  // Array element count: after key "tokens", u32 type ARRAY, u32 elem type.
  const size_t count_at = string_at("tokens") + 8 + 6 + 4 + 4;
  EXPECT_MSG(patched<uint64_t>(count_at, 1ull << 60),
             "metadata array 'tokens' claims 1152921504606846976 strings");
  const size_t fcount_at = string_at("scores") + 8 + 6 + 4 + 4;
  EXPECT_MSG(patched<uint64_t>(fcount_at, 1ull << 62),
             "metadata array 'scores' claims 4611686018427387904 f32 values");
  // A string length beyond the file.
  EXPECT_MSG(patched<uint64_t>(string_at("bb"), 1ull << 40), "string #1 of array 'tokens'");
  EXPECT_MSG(patched<uint64_t>(string_at("llama"), 1ull << 40),
             "string value of metadata key 'general.architecture'");
}

TEST_F(GgufBad, BadMetadata) {
  const size_t alpha_type = string_at("alpha") + 8 + 5;
  EXPECT_MSG(patched<uint32_t>(alpha_type, 13), "metadata key 'alpha' has unknown value type 13 at offset");
  const size_t elem_type = string_at("scores") + 8 + 6 + 4;
  EXPECT_MSG(patched<uint32_t>(elem_type, 42), "metadata array 'scores' has unknown element type 42");
  EXPECT_MSG(patched<uint32_t>(elem_type, 9), "nested arrays");
  // Rename "bravo" to "alpha": a duplicate key.
  std::string dup = good_;
  std::memcpy(dup.data() + string_at("bravo") + 8, "alpha", 5);
  EXPECT_MSG(dup, "duplicate metadata key 'alpha'");
}

TEST_F(GgufBad, BadTensorInfos) {
  const size_t one = tensor_info("t.one"), two = tensor_info("t.two");
  // t.one: n_dims(4) ne0(8) ne1(8) type(4) offset(8).
  EXPECT_MSG(patched<uint32_t>(one, 5), "tensor 't.one' has 5 dimensions");
  EXPECT_MSG(patched<uint64_t>(one + 4 + 8, 0), "tensor 't.one' has dimension 1 = 0");
  EXPECT_MSG(patched<uint64_t>(one + 4, ~0ull), "tensor 't.one' has dimension 0 = -1");
  EXPECT_MSG(patched<uint32_t>(one + 20, 99), "tensor 't.one' has type id 99, unknown");
  EXPECT_MSG(patched<uint64_t>(one + 24, 16),
             "tensor 't.one' has data offset 16, which is not a multiple of the alignment 32");
  // Shape bigger than the data: 4 x 3000 floats.
  EXPECT_MSG(patched<uint64_t>(one + 4 + 8, 3000),
             "tensor 't.one' F32 [4, 3000] needs 48000 bytes at offset");
  EXPECT_MSG(patched<uint64_t>(one + 4 + 8, 1ull << 62), "needs");
  // Data offset past the end of the file.
  const std::string e = open_error(patched<uint64_t>(two + 4 + 8 + 4, 1 << 20));
  EXPECT_NE(
      e.find(fmt::format("tensor 't.two' Q8_0 [64] needs 68 bytes at offset {}, but the file has only {}",
                         File::open(dir_ + "/good.gguf")->data_offset() + (1 << 20), good_.size())),
      std::string::npos)
      << e;
  // Q8_0 rows must be whole blocks of 32.
  EXPECT_MSG(patched<uint64_t>(two + 4, 48),
             "tensor 't.two' has row length 48, which is not a multiple of the Q8_0 block size 32");
  // Duplicate tensor names.
  std::string dup = good_;
  std::memcpy(dup.data() + string_at("t.two") + 8, "t.one", 5);
  EXPECT_MSG(dup, "duplicate tensor name 't.one'");
}

TEST_F(GgufBad, BadAlignment) {
  Writer w;
  w.set_u32("general.alignment", 32);
  w.write(dir_ + "/a.gguf");
  std::string b = test::read_file(dir_ + "/a.gguf");
  const size_t at = b.find("general.alignment") + 17 + 4;
  std::memcpy(b.data() + at, "\x30\x00\x00\x00", 4);  // 48
  EXPECT_MSG(b, "general.alignment is 48, expected a power of two");
  std::memcpy(b.data() + at - 4, "\x06\x00\x00\x00", 4);  // type f32
  EXPECT_MSG(b, "'general.alignment' has type f32");
}

// Random byte corruption of the header: opening either works or throws ferrum::Error, and a file
// that opens can be fully read.
TEST_F(GgufBad, RandomCorruptionNeverCrashes) {
  std::mt19937 rng(1234);
  const size_t header = File::open(dir_ + "/good.gguf")->data_offset();
  const std::string p = scratch("fuzz.gguf");
  int opened = 0, errors = 0;
  for (int it = 0; it < 3000; ++it) {
    std::string b = good_;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % header;
      b[at] = static_cast<char>(rng() % 3 == 0 ? 0xff : rng());
    }
    std::ofstream(p, std::ios::binary | std::ios::trunc) << b;
    try {
      auto f = File::open(p);
      (void)f->metadata_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      for (const auto& k : f->keys()) (void)f->value_json(k);
      for (const auto& t : f->tensors())
        ASSERT_LE(t.data + t.nbytes, f->mapping().data() + f->mapping().size());
      ++opened;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
  EXPECT_GT(opened, 10);
}

TEST_F(GgufBad, MetadataJsonOfANonUtf8KeyDumps) {
  // `ferrum info --json` threw a JSON type error for a key that is not valid UTF-8.
  std::string b = good_;
  b[string_at("alpha") + 8] = static_cast<char>(0xff);
  const std::string p = scratch("key.gguf");
  std::ofstream(p, std::ios::binary) << b;
  auto f = File::open(p);
  const std::string dump = f->metadata_json().dump();
  EXPECT_NE(dump.find("\"\xEF\xBF\xBDlpha\":7"), std::string::npos) << dump;  // U+FFFD for the bad byte
}

}  // namespace
}  // namespace ferrum::gguf
