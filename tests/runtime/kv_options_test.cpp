// KvOptions: the default element type (f16), resolved when a cache is made, and FERRUM_KV_TYPE,
// which fills the type only where none was set (an explicit type, f32 included, wins).
#include <gtest/gtest.h>

#include <cstdlib>

#include "ferrum/error.h"
#include "ferrum/kv_cache.h"
#include "test_util.h"

namespace ferrum {
namespace {

using test::ScopedEnv;

std::string cache_type(const KvOptions& o) {
  return KvCache(2, 2, 8, o).options().type;
}

size_t bytes_per_token(const KvOptions& o) {
  return KvCache(2, 2, 8, o).usage().bytes_per_token;
}

TEST(KvOptionsType, DefaultIsF16) {
  EXPECT_TRUE(KvOptions{}.type.empty());  // unset until a cache is made
  EXPECT_EQ(std::string(kDefaultKvType), "f16");
  EXPECT_EQ(cache_type(KvOptions{}), "f16");
  // 2 layers x K and V x 2 heads x 8 dims x 2 bytes.
  EXPECT_EQ(bytes_per_token(KvOptions{}), 2u * 2 * 2 * 8 * 2);
  KvOptions f32;
  f32.type = "f32";
  EXPECT_EQ(cache_type(f32), "f32");
  EXPECT_EQ(bytes_per_token(f32), 2u * 2 * 2 * 8 * 4);
}

TEST(KvOptionsType, EnvFillsAnUnsetType) {
  ScopedEnv env("FERRUM_KV_TYPE", "int8");
  KvOptions o;
  o.apply_env();
  EXPECT_EQ(o.type, "int8");
  EXPECT_EQ(cache_type(o), "int8");
  ScopedEnv f32("FERRUM_KV_TYPE", "f32");  // f32 is no longer the "unset" value: it can be asked for
  KvOptions p;
  p.apply_env();
  EXPECT_EQ(cache_type(p), "f32");
}

TEST(KvOptionsType, AnExplicitTypeWinsOverTheEnv) {
  ScopedEnv env("FERRUM_KV_TYPE", "int8");
  for (const char* t : {"f32", "f16", "bf16"}) {
    KvOptions o;
    o.type = t;
    o.apply_env();
    EXPECT_EQ(cache_type(o), t);
  }
}

TEST(KvOptionsType, UnknownTypeIsAnErrorNamingIt) {
  ScopedEnv env("FERRUM_KV_TYPE", "f8");
  KvOptions o;
  o.apply_env();
  try {
    KvCache kv(2, 2, 8, o);
    ADD_FAILURE() << "no error for KV type f8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV type 'f8' is not known"), std::string::npos) << e.what();
  }
}

// INT8 keys are stored in quads of dimensions (kv_format.h): other head sizes are refused.
TEST(KvOptions, Int8NeedsHeadSizesThatAreMultiplesOfFour) {
  KvOptions o;
  o.type = "int8";
  EXPECT_NO_THROW(KvCache(2, 2, 8, o));
  try {
    KvCache(2, 2, 6, o);
    FAIL() << "head size 6 accepted for int8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 4"), std::string::npos) << e.what();
  }
  o.type = "f16";
  EXPECT_NO_THROW(KvCache(2, 2, 6, o));
}

}  // namespace
}  // namespace ferrum
