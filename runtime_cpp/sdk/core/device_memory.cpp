#include "device_memory.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

#include "device_model/device_profile.h"

namespace pz_sdk {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::uintptr_t, std::size_t> blocks;  // start -> size
  std::size_t live_bytes = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Caller holds the lock. Returns the block containing p, or blocks.end().
std::map<std::uintptr_t, std::size_t>::const_iterator find(const Registry& r, std::uintptr_t p) {
  auto it = r.blocks.upper_bound(p);
  if (it == r.blocks.begin()) return r.blocks.end();
  --it;
  // Zero-size allocations still own one byte of address so their pointer is recognised.
  std::size_t extent = it->second ? it->second : 1;
  return p < it->first + extent ? it : r.blocks.end();
}

// What an allocation of `bytes` takes: whole 64-byte lines, at least one.
std::size_t footprint(std::size_t bytes) { return bytes == 0 ? 64 : (bytes + 63) / 64 * 64; }

}  // namespace

void* deviceAlloc(std::size_t bytes) {
  const std::size_t rounded = footprint(bytes);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  // The device's DDR is finite: past the profile's size a real cnrtMalloc fails too.
  if (static_cast<double>(r.live_bytes + rounded) > currentProfile().dram_bytes) return nullptr;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) return nullptr;
  r.blocks[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  r.live_bytes += rounded;
  return p;
}

bool deviceFree(void* ptr) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.blocks.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == r.blocks.end()) return false;
    r.live_bytes -= footprint(it->second);
    r.blocks.erase(it);
  }
  std::free(ptr);
  return true;
}

bool isDevicePointer(const void* ptr) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return find(r, reinterpret_cast<std::uintptr_t>(ptr)) != r.blocks.end();
}

bool deviceRangeValid(const void* ptr, std::size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto p = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = find(r, p);
  if (it == r.blocks.end()) return false;
  return bytes <= it->first + it->second - p;
}

}  // namespace pz_sdk
