// The conv kernels' path for group == ci == co > 1 (kernels_conv_depthwise.cpp), which
// prepareConv and convForward take themselves: the executor sees only the conv kernel.
#ifndef PZ_SDK_KERNELS_CONV_DEPTHWISE_H_
#define PZ_SDK_KERNELS_CONV_DEPTHWISE_H_

#include "core/executor.h"

namespace pz_sdk {

void prepareDepthwise(PreparedOp& op);
void depthwiseForward(PreparedOp& op, const float* in, float* out);

}  // namespace pz_sdk

#endif  // PZ_SDK_KERNELS_CONV_DEPTHWISE_H_
