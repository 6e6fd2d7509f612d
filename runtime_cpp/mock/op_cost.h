// Translates CNML op descriptions into the device model's LayerWork / FusionWork.
#ifndef PZ_MOCK_OP_COST_H_
#define PZ_MOCK_OP_COST_H_

#include <cstdint>
#include <vector>

#include "device_model.h"
#include "state.h"

namespace pz_mock {

LayerWork layerWorkOf(const OpDesc& op);

// io_ids: tensors declared as fusion inputs/outputs; every other tensor an op writes is an
// intermediate that the device model tries to keep on chip.
FusionWork fusionWorkOf(const std::vector<OpDesc>& ops, const std::vector<Operand>& io);

// The profile the mock's notifiers use.
const DeviceProfile& mockProfile();

}  // namespace pz_mock

#endif  // PZ_MOCK_OP_COST_H_
