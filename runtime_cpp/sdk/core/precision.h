// Compute precision of a layer: what the device model prices by (device_model.h) and what
// an op computes in (state.h: precisionOf). Pure C++; no CNML types.
#ifndef PZ_SDK_PRECISION_H_
#define PZ_SDK_PRECISION_H_

namespace pz_sdk {

// fp32: FLOAT32 activations; fp16: FLOAT16 activations (and Cast ops); int8: a Conv,
// ConvGroup or Mlp whose input computes in int8 (cnmlSetOperationComputingDataType).
enum class Precision { kFp32 = 0, kFp16 = 1, kInt8 = 2 };

}  // namespace pz_sdk

#endif  // PZ_SDK_PRECISION_H_
