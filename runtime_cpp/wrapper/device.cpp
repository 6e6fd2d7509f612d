// Device: SDK start-up and the single queue every layer runs on.
#include "detail.h"

namespace pz {

Device::Device() {
  check(cnmlInit(0), "device", "cnmlInit");
  try {
    cnrtDev_t dev = 0;
    check(cnrtGetDeviceHandle(&dev, 0), "device", "cnrtGetDeviceHandle");
    check(cnrtSetCurrentDevice(dev), "device", "cnrtSetCurrentDevice");
    check(cnrtCreateQueue(&queue_), "device", "cnrtCreateQueue");
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
