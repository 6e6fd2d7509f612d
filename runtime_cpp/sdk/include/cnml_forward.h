// CNML base op forwards (through cnml.h).
#ifndef PALEOZOIC_SDK_CNML_FORWARD_H_
#define PALEOZOIC_SDK_CNML_FORWARD_H_

#include "cnml_types.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- forward (G3 `_V4`: tensor/pointer pairs; tensors may be NULL) -----------------
// extra: NULL, or a cnrtInvokeFuncParam_t* (cnrt.h) whose data_parallelism runs the batch as
// that many groups of frames at once, each group on core_limit cores of its own (MLU100 data
// parallelism, as Cambricon Caffe passes it to its forwards). Mock rules: end not
// CNRT_PARAM_END or a null data_parallelism -> INVALIDPARAM; data_parallelism < 1, data
// parallelism x core_limit above the device's cores (32), or a batch (dims[0] of the first
// input, and of any other input that is not 1) it does not divide -> INVALIDARG. The
// numbers are those of dp 1; the simulated time is one group's (device_model.h).
cnmlStatus_t cnmlComputeConvOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                         void* input, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeConvGroupOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                              void* input, cnmlTensor_t output_tensor,
                                              void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputePoolOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                         void* input, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeActiveOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                           void* input, cnmlTensor_t output_tensor,
                                           void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeBatchNormOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                              void* input, cnmlTensor_t output_tensor,
                                              void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeScaleOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                          void* input, cnmlTensor_t output_tensor, void* output,
                                          cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeAddOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                        void* input_1, cnmlTensor_t input_tensor_2,
                                        void* input_2, cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra);
// Each two-input forward runs only ops of its own creator (else INVALIDPARAM).
cnmlStatus_t cnmlComputeSubOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                        void* input_1, cnmlTensor_t input_tensor_2,
                                        void* input_2, cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeMultOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                         void* input_1, cnmlTensor_t input_tensor_2,
                                         void* input_2, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeRealDivOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                            void* input_1, cnmlTensor_t input_tensor_2,
                                            void* input_2, cnmlTensor_t output_tensor, void* output,
                                            cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeBroadcastAddOpForward_V4(cnmlBaseOp_t op,
                                                 cnmlTensor_t input_tensor_1, void* input_1,
                                                 cnmlTensor_t input_tensor_2, void* input_2,
                                                 cnmlTensor_t output_tensor, void* output,
                                                 cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeBroadcastSubOpForward_V4(cnmlBaseOp_t op,
                                                 cnmlTensor_t input_tensor_1, void* input_1,
                                                 cnmlTensor_t input_tensor_2, void* input_2,
                                                 cnmlTensor_t output_tensor, void* output,
                                                 cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeBroadcastMultOpForward_V4(cnmlBaseOp_t op,
                                                  cnmlTensor_t input_tensor_1, void* input_1,
                                                  cnmlTensor_t input_tensor_2, void* input_2,
                                                  cnmlTensor_t output_tensor, void* output,
                                                  cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeMlpOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor, void* input,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeSoftmaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                            void* input, cnmlTensor_t output_tensor,
                                            void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeBatchDotOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                             void* input_1, cnmlTensor_t input_tensor_2,
                                             void* input_2, cnmlTensor_t output_tensor,
                                             void* output, cnrtQueue_t queue, void* extra);
// `input` (the table's data) is not read: the op holds the bound CNML_CONST (pass nullptr).
cnmlStatus_t cnmlComputeGatherV2OpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                             void* input, cnmlTensor_t index_tensor, void* index,
                                             cnmlTensor_t output_tensor, void* output,
                                             cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdSoftmaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
// inputs: input, then initial_h and initial_c when the op was created with them.
cnmlStatus_t cnmlComputeRnnOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensors[],
                                        void* inputs[], int input_num,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdLayerNormOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeSqrtOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeRsqrtOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputePowerOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeErfOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeGeluOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeExpOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeLogOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeAbsOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNegOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNotOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeSinOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCosOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeClipOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdLogSoftmaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
// Each reduce forward runs only ops of its own creator (else INVALIDPARAM).
cnmlStatus_t cnmlComputeNdReduceSumOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdReduceMeanOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdReduceMaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdReduceMinOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNdReduceProdOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                      void* input, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputePowOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeBroadcastPowOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleNEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeLessOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleLessOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeLessEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleLessEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeGreaterOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleGreaterOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeGreaterEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleGreaterEqualOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeAndOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleAndOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeOrOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleOrOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeXorOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCycleXorOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                      void* input_1, cnmlTensor_t input_tensor_2,
                                      void* input_2, cnmlTensor_t output_tensor, void* output,
                                      cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeConcatOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensors[],
                                           void* inputs[], int input_num,
                                           cnmlTensor_t output_tensors[], void* outputs[],
                                           int output_num, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeLrnOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor, void* input,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeReshapeOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                            void* input, cnmlTensor_t output_tensor,
                                            void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeTransposeProOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                 void* input, cnmlTensor_t output_tensor,
                                                 void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputePreluOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                          void* input, cnmlTensor_t output_tensor, void* output,
                                          cnrtQueue_t queue, void* extra);
// `_V2` is the SDK's name for the Nd strided slice's tensor/pointer-pair forward (the `_V4`
// parameter list; Cambricon's TensorFlow bridge and the cnpapi callback table).
cnmlStatus_t cnmlComputeNdStridedSliceOpForward_V2(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                   void* input, cnmlTensor_t output_tensor,
                                                   void* output, cnrtQueue_t queue,
                                                   void* extra);

// Deconv and DeconvGroup ops accept either deconv forward (as the conv forwards do).
cnmlStatus_t cnmlComputeDeconvOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                           void* input, cnmlTensor_t output_tensor,
                                           void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeDeconvGroupOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                void* input, cnmlTensor_t output_tensor,
                                                void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeNearestNeighborOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                    void* input, cnmlTensor_t output_tensor,
                                                    void* output, cnrtQueue_t queue,
                                                    void* extra);
cnmlStatus_t cnmlComputeInterpOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                           void* input, cnmlTensor_t output_tensor,
                                           void* output, cnrtQueue_t queue, void* extra);
cnmlStatus_t cnmlComputeCastOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                         void* input, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra);

#ifdef __cplusplus
}
#endif

#endif  // PALEOZOIC_SDK_CNML_FORWARD_H_
