// Device: SDK start-up and the single queue every layer runs on.
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "detail.h"

namespace pz {
namespace {

// glibc raises its mmap threshold to the size of each large block freed, so later buffers of
// that size come from the brk heap, where freeing one does not return its pages while a block
// above it lives. A compile frees weight-sized buffers (file reads, handed-over consts, their
// reordered forms) as it makes others: on ResNet-50 that left 30-40 MB resident that nothing
// used. With a fixed threshold every buffer of 1 MB or more is a mapping of its own, returned
// when freed. The forward allocates nothing, so the extra mmap calls cost only at compile.
// A threshold the user set (GLIBC_TUNABLES, MALLOC_MMAP_THRESHOLD_) is left as it is.
void fixMallocThreshold() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
        (tunables != nullptr && std::strstr(tunables, "mmap_threshold") != nullptr))
      return;
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
  });
#endif
}

}  // namespace

Device::Device() {
  fixMallocThreshold();
  PZ_CHECK("device", cnmlInit(0));
  try {
    cnrtDev_t dev = 0;
    PZ_CHECK("device", cnrtGetDeviceHandle(&dev, 0));
    PZ_CHECK("device", cnrtSetCurrentDevice(dev));
    PZ_CHECK("device", cnrtCreateQueue(&queue_));
  } catch (...) {
    cnmlExit();
    throw;
  }
}

Device::~Device() {
  if (queue_ != nullptr) cnrtDestroyQueue(queue_);
  cnmlExit();
}

}  // namespace pz
