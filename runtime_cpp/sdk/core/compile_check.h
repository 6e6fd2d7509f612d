// Checks shared by cnmlCompileBaseOp and cnmlCompileFusionOp, and by the forwards.
#ifndef PZ_SDK_COMPILE_CHECK_H_
#define PZ_SDK_COMPILE_CHECK_H_

#include <vector>

#include "state.h"

namespace pz_sdk {

// Unknown version -> INVALIDPARAM; another real core -> UNSUPPORT (the mock models MLU100
// only); core_limit outside 1..32 -> INVALIDPARAM.
cnmlStatus_t checkTarget(cnmlCoreVersion_t version, int core_limit);

// Forward operands: optional tensor handles must match the declared dims, and pointers must
// cover the operand inside one tracked device allocation. Wrong count -> INVALIDARG,
// anything else -> INVALIDPARAM. A base op's forward (strategies null) given a tensor with a
// data-preprocess strategy -> INVALIDARG; a fusion op's passes the strategy each operand had
// at cnmlSetFusionIO (-1: none), and a tensor whose strategy differs -> INVALIDARG. Buffers
// are checked for the operand's transfer dtype (the twin's under MLU priority).
cnmlStatus_t checkOperands(const std::vector<Operand>& declared, const cnmlTensor_t* tensors,
                           void* const* ptrs, int count,
                           const std::vector<int>* strategies = nullptr,
                           const std::vector<cnmlDataType_t>* transfer = nullptr);

// Precision rules of an op at compile (cnml.h, "Mock rules on precision"): INVALIDARG, or
// UNSUPPORT for an int8 reduction that could overflow int32.
cnmlStatus_t checkPrecision(const OpDesc& op);

// The `extra` argument of a forward: NULL (one group of frames on the whole chip) or a
// cnrtInvokeFuncParam_t. Its end must be CNRT_PARAM_END and data_parallelism non-null
// (INVALIDPARAM); *data_parallelism must be in 1..the device's cores / the op's core_limit
// (dp x mp <= 32 on the MLU100) and divide the batch (dims[0] of the first input, and of
// every other input not broadcast over it with batch 1); a non-null affinity (a mask of
// cores) must name only the device's cores and at least dp x mp of them (INVALIDARG).
// An op compiled for one core, forwarded from a thread placed on a DDR channel
// (cnrtSetCurrentChannel), runs on that channel's cores with that channel's share of the
// DRAM bandwidth: its dp must fit the channel's cores (INVALIDARG).
cnmlStatus_t checkInvokeParam(void* extra, const OpTiming& timing,
                              const std::vector<Operand>& inputs, Launch* launch);

}  // namespace pz_sdk

#endif  // PZ_SDK_COMPILE_CHECK_H_
