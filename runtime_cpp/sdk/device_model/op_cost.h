// Translates CNML op descriptions into the device model's LayerWork / GraphLayer lists.
#ifndef PZ_SDK_OP_COST_H_
#define PZ_SDK_OP_COST_H_

#include <cstdint>
#include <vector>

#include "device_model.h"
#include "device_profile.h"
#include "core/state.h"

namespace pz_sdk {

// Precision a cost query prices an op at: as built (the op's own dtypes and int8 mode), or
// as if built in fp32 / fp16 / int8 (planning before the session exists in that precision).
// An int8 override on an op that has no int8 mode (anything but Conv, ConvGroup, Mlp) prices
// it as fp16; overrides do not apply to Cast ops (their dtypes are the point of them).
enum class PrecisionOverride { kAsBuilt = -1, kFp32 = 0, kFp16 = 1, kInt8 = 2 };

LayerWork layerWorkOf(const OpDesc& op, PrecisionOverride as = PrecisionOverride::kAsBuilt);

// The ops of a fusion op as a layer list: inputs are tensors read but produced by no op in
// the list; `outputs` (ids) leave the block; every other tensor an op writes is an
// intermediate (last read by its last consumer in the list). `as`: one override per op, or
// empty (all as built).
std::vector<GraphLayer> fusionGraphOf(const std::vector<const OpDesc*>& ops,
                                      const std::vector<std::uint64_t>& outputs,
                                      const std::vector<PrecisionOverride>& as = {});

// Ops in list order with the index of the last op reading each op's outputs (>= ops.size()
// when needed after the list), for cost tables.
std::vector<GraphLayer> listGraphOf(const std::vector<const OpDesc*>& ops,
                                    const std::vector<int>& last_use,
                                    const std::vector<PrecisionOverride>& as = {});

// The simulated time of a fusion op over `ops` with these outputs on mp cores.
double fusionOpTimeUs(const std::vector<const OpDesc*>& ops,
                      const std::vector<std::uint64_t>& outputs, int mp);

// A compiled op's timing (op_timing.h), from its description.
OpTiming baseOpTiming(const OpDesc& op, int mp);
OpTiming fusionOpTiming(const std::vector<const OpDesc*>& ops,
                        const std::vector<std::uint64_t>& outputs, int mp);

// The profile the mock's notifiers use (process-wide; cnmlMockSetDeviceProfile sets it).
const DeviceProfile& mockProfile();

}  // namespace pz_sdk

#endif  // PZ_SDK_OP_COST_H_
