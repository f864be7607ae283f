// Run-time choice of the kernel tier: the best one this CPU runs (cpu_tiers_x86.cpp /
// cpu_tiers_arm.cpp list them and detect support), FERRUM_ISA or force_isa.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/fail.h"
#include "kernels/cpu/cpu_tiers.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul.h"

namespace ferrum::kernels {
namespace {

std::string tier_names() {
  std::string s;
  const auto tiers = cpu_tiers();
  for (size_t i = 0; i < tiers.size(); ++i)
    s += (i == 0 ? "" : i + 1 == tiers.size() ? " or " : ", ") + std::string(tiers[i].name);
  return s;
}

const CpuTier* find_tier(const char* name) {
  for (const CpuTier& t : cpu_tiers())
    if (std::strcmp(t.name, name) == 0) return &t;
  return nullptr;
}

const IsaKernels* by_name(const char* name) {
  const CpuTier* t = find_tier(name);
  if (!t) fail("unknown ISA '{}' (this build's tiers: {})", name, tier_names());
  return t->supported() ? &t->kernels() : nullptr;
}

const IsaKernels& best() {
  const auto tiers = cpu_tiers();
  for (size_t i = tiers.size(); i-- > 0;)
    if (tiers[i].supported()) return tiers[i].kernels();
  return scalar_kernels();
}

const IsaKernels* initial() {
  if (const char* env = std::getenv("FERRUM_ISA"); env && *env) {
    const IsaKernels* k = by_name(env);
    if (!k) fail("FERRUM_ISA={}: this CPU does not support it", env);
    return k;
  }
  return &best();
}

std::atomic<const IsaKernels*> g_active{nullptr};

}  // namespace

const IsaKernels& active_kernels() {
  const IsaKernels* k = g_active.load(std::memory_order_acquire);
  if (!k) {
    k = initial();
    g_active.store(k, std::memory_order_release);
  }
  return *k;
}

const IsaKernels* isa_kernels(const char* name) {
  return by_name(name);
}

const char* active_isa() {
  return active_kernels().name;
}

bool isa_supported(const char* name) {
  return by_name(name) != nullptr;
}

const char* best_isa() {
  return best().name;
}

std::vector<const char*> isa_tiers() {
  std::vector<const char*> v;
  for (const CpuTier& t : cpu_tiers()) v.push_back(t.name);
  return v;
}

void force_isa(const char* name) {
  const IsaKernels* k = by_name(name);
  if (!k) fail("force_isa({}): this CPU does not support it", name);
  g_active.store(k, std::memory_order_release);
}

}  // namespace ferrum::kernels
