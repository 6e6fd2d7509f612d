#include "compile_check.h"

#include <algorithm>

#include "device_memory.h"
#include "device_model/op_cost.h"
#include "kernels/numerics.h"

namespace pz_sdk {

cnmlStatus_t checkTarget(cnmlCoreVersion_t version, int core_limit) {
  if (version < CNML_1H8 || version > CNML_MLU220) return CNML_STATUS_INVALIDPARAM;
  if (version != CNML_MLU100) return CNML_STATUS_UNSUPPORT;
  if (core_limit < 1 || core_limit > kMaxCoreLimit) return CNML_STATUS_INVALIDPARAM;
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t checkOperands(const std::vector<Operand>& declared, const cnmlTensor_t* tensors,
                           void* const* ptrs, int count, const std::vector<int>* strategies,
                           const std::vector<cnmlDataType_t>* transfer) {
  if (count != static_cast<int>(declared.size())) return CNML_STATUS_INVALIDARG;
  if (!ptrs) return CNML_STATUS_INVALIDPARAM;
  for (int i = 0; i < count; ++i) {
    if (tensors && tensors[i] && (tensors[i]->impl->dims != declared[i].dims ||
                                  tensors[i]->impl->dtype != declared[i].dtype))
      return CNML_STATUS_INVALIDPARAM;
    if (tensors && tensors[i] &&
        tensors[i]->impl->preprocess != (strategies ? (*strategies)[i] : -1))
      return CNML_STATUS_INVALIDARG;
    const cnmlDataType_t dtype = transfer ? (*transfer)[i] : declared[i].dtype;
    if (!ptrs[i] || !deviceRangeValid(ptrs[i], declared[i].elements() * dtypeSize(dtype)))
      return CNML_STATUS_INVALIDPARAM;
  }
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t checkPrecision(const OpDesc& op) {
  if (op.kind == OpKind::kCast || op.kind == OpKind::kHostTransfer) return CNML_STATUS_SUCCESS;
  if (op.kind == OpKind::kGatherV2)  // the table is stored in the output's dtype
    return op.consts.at(0)->dtype == op.outputs.at(0).dtype ? CNML_STATUS_SUCCESS
                                                             : CNML_STATUS_INVALIDARG;
  const cnmlDataType_t act = op.inputs.at(0).dtype;
  if (!op.int8) {
    // fp32 ops take FLOAT32 consts, fp16 ops FLOAT16 ones; an INT8 filter needs int8 compute.
    for (const TensorRef& t : op.consts)
      if (t && t->dtype != act) return CNML_STATUS_INVALIDARG;
    return CNML_STATUS_SUCCESS;
  }
  if (act != CNML_DATA_FLOAT16) return CNML_STATUS_INVALIDARG;
  const TensorRef& filter = op.consts.at(0);
  if (!filter || filter->dtype != CNML_DATA_INT8) return CNML_STATUS_INVALIDARG;
  if (op.consts.size() > 1 && op.consts[1] && op.consts[1]->dtype != CNML_DATA_FLOAT16)
    return CNML_STATUS_INVALIDARG;
  const TensorQuant& q = filter->quant;
  if (!q.positionSet() || !q.scaleSet()) return CNML_STATUS_INVALIDARG;
  const std::size_t channels = static_cast<std::size_t>(filter->dims.at(0));
  if (!q.positions.empty() && q.positions.size() != channels) return CNML_STATUS_INVALIDARG;
  if (!q.scales.empty() && q.scales.size() != channels) return CNML_STATUS_INVALIDARG;
  const long long reduction = static_cast<long long>(elementCount(filter->dims) / channels);
  if (reduction > numerics::kMaxInt8Reduction) return CNML_STATUS_UNSUPPORT;
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t checkInvokeParam(void* extra, const OpTiming& timing,
                              const std::vector<Operand>& inputs, Launch* launch) {
  *launch = Launch();
  // A channel placement takes effect at MP 1 (CNRT): the forward runs on the channel's
  // cores with its memory on that channel, so it has that channel's share of the DRAM
  // bandwidth, and its groups of frames must fit the channel's cores.
  const DeviceProfile& profile = mockProfile();
  const bool placed = timing.mp() == 1 && currentChannel() >= 0;
  if (placed) launch->dram_share = 1.0 / profile.dram_channels;
  if (!extra) return CNML_STATUS_SUCCESS;
  const auto* param = static_cast<const cnrtInvokeFuncParam_t*>(extra);
  if (param->end != CNRT_PARAM_END || !param->data_parallelism) return CNML_STATUS_INVALIDPARAM;
  const int frames = *param->data_parallelism;
  if (frames < 1 || frames > timing.maxDataParallelism()) return CNML_STATUS_INVALIDARG;
  // The first input carries the batch; another may be broadcast over it (batch 1).
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Dims& d = inputs[i].dims;
    if (!d.empty() && (i == 0 || d[0] != 1) && d[0] % frames != 0) return CNML_STATUS_INVALIDARG;
  }
  launch->dp = frames;
  if (placed && frames > profile.cores / profile.dram_channels) return CNML_STATUS_INVALIDARG;
  if (param->affinity) {
    const int cores = profile.cores;
    const unsigned int mask = *param->affinity;
    const int chosen = __builtin_popcount(mask);
    if (mask == 0 || (cores < 32 && (mask >> cores) != 0) || chosen < frames * timing.mp())
      return CNML_STATUS_INVALIDARG;
    launch->dram_share = std::min(launch->dram_share, static_cast<double>(chosen) / cores);
  }
  return CNML_STATUS_SUCCESS;
}

}  // namespace pz_sdk
