// The mock SDK's backend hooks: no library behind the kernels, simulated device time.
#include "core/compute_backend.h"

namespace pz_sdk {

std::unique_ptr<BackendOp> makeBackendOp(const std::vector<const OpDesc*>&, int) {
  return nullptr;
}

bool backendCanAppend(const std::vector<const OpDesc*>&, const OpDesc&) { return false; }

bool backendLink(BackendOp&, int, BackendOp&, int) { return false; }

bool backendSkipDense(BackendOp&, int) { return false; }

bool backendWriteOver(BackendOp&, int, BackendOp&, int) { return false; }

// The device the mock models (an MLU-100) has no recurrent unit: cells, as on CNML.
bool backendComputesRecurrent(const OpDesc&) { return false; }

bool backendTimesWallClock() { return false; }

}  // namespace pz_sdk
