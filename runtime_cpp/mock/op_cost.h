// Translates CNML op descriptions into the device model's LayerWork / GraphLayer lists.
#ifndef PZ_MOCK_OP_COST_H_
#define PZ_MOCK_OP_COST_H_

#include <cstdint>
#include <vector>

#include "device_model.h"
#include "device_profile.h"
#include "state.h"

namespace pz_mock {

LayerWork layerWorkOf(const OpDesc& op);

// The ops of a fusion op as a layer list: inputs are tensors read but produced by no op in
// the list; `outputs` (ids) leave the block; every other tensor an op writes is an
// intermediate (last read by its last consumer in the list).
std::vector<GraphLayer> fusionGraphOf(const std::vector<const OpDesc*>& ops,
                                      const std::vector<std::uint64_t>& outputs);

// Ops in list order with the index of the last op reading each op's outputs (>= ops.size()
// when needed after the list), for cost tables.
std::vector<GraphLayer> listGraphOf(const std::vector<const OpDesc*>& ops,
                                    const std::vector<int>& last_use);

// The simulated time of a fusion op over `ops` with these outputs on mp cores.
double fusionOpTimeUs(const std::vector<const OpDesc*>& ops,
                      const std::vector<std::uint64_t>& outputs, int mp);

// The profile the mock's notifiers use (process-wide; cnmlMockSetDeviceProfile sets it).
const DeviceProfile& mockProfile();

}  // namespace pz_mock

#endif  // PZ_MOCK_OP_COST_H_
