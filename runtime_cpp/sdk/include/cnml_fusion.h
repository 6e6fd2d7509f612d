// CNML fusion ops (through cnml.h).
#ifndef PALEOZOIC_SDK_CNML_FUSION_H_
#define PALEOZOIC_SDK_CNML_FUSION_H_

#include "cnml_types.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- fusion ------------------------------------------------------------------
// Base ops are fused in topological order and must not have been compiled alone.
// Mock rule: the fusion op deep-copies ops, descriptors and const data at cnmlFuseOp.
cnmlStatus_t cnmlCreateFusionOp(cnmlFusionOp_t* fusion_op);
cnmlStatus_t cnmlFuseOp(cnmlBaseOp_t op, cnmlFusionOp_t fusion_op);
cnmlStatus_t cnmlSetFusionIO(cnmlFusionOp_t fusion_op, cnmlTensor_t* inputs, int input_num,
                             cnmlTensor_t* outputs, int output_num);
cnmlStatus_t cnmlCompileFusionOp(cnmlFusionOp_t fusion_op, cnmlCoreVersion_t version,
                                 int core_limit);
cnmlStatus_t cnmlComputeFusionOpForward_V4(cnmlFusionOp_t fusion_op, cnmlTensor_t input_tensors[],
                                           void* inputs[], int input_num,
                                           cnmlTensor_t output_tensors[], void* outputs[],
                                           int output_num, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlDestroyFusionOp(cnmlFusionOp_t* fusion_op);

#ifdef __cplusplus
}
#endif

#endif  // PALEOZOIC_SDK_CNML_FUSION_H_
