// KvOptions: the default element type (f16), resolved when a cache is made; FERRUM_KV_TYPE and
// FERRUM_KV_LAYOUT, which fill only what was not set (an explicit type, f32 included, wins), and
// the names of layouts and types, parsed only at such edges.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ferrum/error.h"
#include "ferrum/kv_cache.h"
#include "test_util.h"

namespace ferrum {
namespace {

using test::ScopedEnv;

std::string cache_type(const KvOptions& o) {
  return kv_type_name(KvCache(2, 2, 8, o).options().type.value());
}

size_t bytes_per_token(const KvOptions& o) {
  return KvCache(2, 2, 8, o).usage().bytes_per_token;
}

TEST(KvOptionsType, DefaultIsF16) {
  EXPECT_FALSE(KvOptions{}.type.has_value());  // unset until a cache is made
  EXPECT_EQ(kDefaultKvType, KvType::F16);
  EXPECT_EQ(cache_type(KvOptions{}), "f16");
  // 2 layers x K and V x 2 heads x 8 dims x 2 bytes.
  EXPECT_EQ(bytes_per_token(KvOptions{}), 2u * 2 * 2 * 8 * 2);
  KvOptions f32;
  f32.type = KvType::F32;
  EXPECT_EQ(cache_type(f32), "f32");
  EXPECT_EQ(bytes_per_token(f32), 2u * 2 * 2 * 8 * 4);
}

TEST(KvOptionsType, EnvFillsAnUnsetType) {
  ScopedEnv env("FERRUM_KV_TYPE", "int8");
  KvOptions o;
  o.apply_env();
  EXPECT_EQ(o.type, KvType::INT8);
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
    o.type = parse_kv_type(t);
    o.apply_env();
    EXPECT_EQ(cache_type(o), t);
  }
}

// A bad name in the environment is refused where it is read, naming the variable and the value.
TEST(KvOptionsType, UnknownNamesInTheEnvAreErrorsNamingThem) {
  const struct {
    const char *var, *value, *want;
  } cases[] = {
      {"FERRUM_KV_TYPE", "f8", "FERRUM_KV_TYPE: KV type 'f8' is not known"},
      {"FERRUM_KV_LAYOUT", "ring", "FERRUM_KV_LAYOUT: KV layout 'ring' is not known"},
      {"FERRUM_KV_CAPACITY", "12k", "FERRUM_KV_CAPACITY: expects a whole number of tokens, got '12k'"},
      {"FERRUM_KV_POOL", "-5", "FERRUM_KV_POOL: expects a whole number"}};
  for (const auto& c : cases) {
    ScopedEnv env(c.var, c.value);
    KvOptions o;
    try {
      o.apply_env();
      ADD_FAILURE() << "no error for " << c.var << "=" << c.value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.want), std::string::npos) << e.what();
    }
  }
  ScopedEnv layout("FERRUM_KV_LAYOUT", "paged");
  KvOptions o;
  o.apply_env();
  EXPECT_EQ(o.layout, KvLayout::Paged);
}

TEST(KvOptionsType, NamesRoundTrip) {
  for (KvType t : {KvType::F32, KvType::F16, KvType::BF16, KvType::INT8})
    EXPECT_EQ(parse_kv_type(kv_type_name(t)), t);
  for (KvLayout l : {KvLayout::Contiguous, KvLayout::Paged}) EXPECT_EQ(parse_kv_layout(kv_layout_name(l)), l);
  EXPECT_THROW(parse_kv_type("F16"), Error);
  EXPECT_THROW(parse_kv_layout(""), Error);
}

// INT8 keys are stored in quads of dimensions (kv_format.h): other head sizes are refused.
TEST(KvOptions, Int8NeedsHeadSizesThatAreMultiplesOfFour) {
  KvOptions o;
  o.type = KvType::INT8;
  EXPECT_NO_THROW(KvCache(2, 2, 8, o));
  try {
    KvCache(2, 2, 6, o);
    FAIL() << "head size 6 accepted for int8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 4"), std::string::npos) << e.what();
  }
  o.type = KvType::F16;
  EXPECT_NO_THROW(KvCache(2, 2, 6, o));
}

}  // namespace
}  // namespace ferrum
