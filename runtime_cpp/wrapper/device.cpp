// Device: SDK start-up and the single queue every layer runs on.
#include "detail.h"

namespace pz {

Device::Device() {
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
