// CNML base op creation and compile (through cnml.h).
#ifndef PALEOZOIC_SDK_CNML_OPS_H_
#define PALEOZOIC_SDK_CNML_OPS_H_

#include "cnml_types.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- operator creation -------------------------------------------------------
// Filter [co, ci/group, kh, kw]; bias [co] or NULL. Mock rule: dilation > 1 with pads is
// accepted (the real MLU100 wants an AddPad op in front; the wrapper does not rely on it).
cnmlStatus_t cnmlCreateConvOp(cnmlBaseOp_t* op, cnmlConvOpParam_t param, cnmlTensor_t input,
                              cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias);
cnmlStatus_t cnmlCreateConvGroupOp(cnmlBaseOp_t* op, cnmlConvOpParam_t param,
                                   cnmlTensor_t input, cnmlTensor_t output, cnmlTensor_t filter,
                                   cnmlTensor_t bias, int group);
// real = true: average over the window cells inside the input (count_include_pad = 0).
cnmlStatus_t cnmlCreatePoolOp(cnmlBaseOp_t* op, cnmlPoolOpParam_t param, cnmlTensor_t input,
                              cnmlTensor_t output);
cnmlStatus_t cnmlCreateActiveOp(cnmlBaseOp_t* op, cnmlActiveFunction_t fn, cnmlTensor_t input,
                                cnmlTensor_t output);
// out = (in - mean) * var, per channel (axis 1); var holds 1 / sqrt(variance + eps).
cnmlStatus_t cnmlCreateBatchNormOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                                   cnmlTensor_t mean, cnmlTensor_t var);
// out = alpha * in + beta, alpha/beta per channel (axis 1) or a single value.
cnmlStatus_t cnmlCreateScaleOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               cnmlTensor_t alpha, cnmlTensor_t beta);
// Element-wise out = in1 (+ - * /) in2 of equal shapes (all three dims equal).
cnmlStatus_t cnmlCreateAddOp(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                             cnmlTensor_t output);
cnmlStatus_t cnmlCreateSubOp(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                             cnmlTensor_t output);
cnmlStatus_t cnmlCreateMultOp(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                              cnmlTensor_t output);
// RealDiv is element-wise only: the SDK has no broadcast form of it.
cnmlStatus_t cnmlCreateRealDivOp(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                                 cnmlTensor_t output);
// in2 broadcast to in1; out has in1's dims. Mock rule: numpy rules in one direction: in2 has
// at most in1's rank, dims right-aligned, each in2 dim equal to in1's or 1 (so a
// per-channel in2 may be [1, c, 1, 1] or [c, 1, 1]); anything else -> INVALIDPARAM.
cnmlStatus_t cnmlCreateBroadcastAddOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                      cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateBroadcastSubOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                      cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateBroadcastMultOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                       cnmlTensor_t input_2, cnmlTensor_t output);
// Mock ops: out = in1 ^ in2 (C's pow: a negative base with a non-integer exponent is nan),
// element-wise (equal dims) or with in2 broadcast to in1 as the Broadcast* ops take it.
cnmlStatus_t cnmlCreatePowOp(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                             cnmlTensor_t output);
cnmlStatus_t cnmlCreateBroadcastPowOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                      cnmlTensor_t input_2, cnmlTensor_t output);
// Comparisons and logic (MLU100 CNML's Equal, NEqual, Less, LessEqual, Greater,
// GreaterEqual, And, Or, Xor; the Cycle* forms read in2 repeatedly along in1): out = 1.0
// where the relation holds, else 0.0. Comparisons are IEEE's (false with a nan operand,
// NEqual true); the logic ops take any nonzero value, nan included, as true. Element-wise
// ops need equal dims. Mock rule for Cycle*: in2 broadcast to in1 as the Broadcast* ops take
// it; anything else -> INVALIDPARAM.
cnmlStatus_t cnmlCreateEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                               cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                    cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleNEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                     cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateLessOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                              cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleLessOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                   cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateLessEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                   cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleLessEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                        cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateGreaterOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                 cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleGreaterOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                      cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateGreaterEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                      cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleGreaterEqualOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                           cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateAndOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                             cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleAndOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                  cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateOrOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                            cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleOrOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                 cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateXorOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                             cnmlTensor_t input_2, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCycleXorOp(cnmlBaseOp_t* op, cnmlTensor_t input_1,
                                  cnmlTensor_t input_2, cnmlTensor_t output);
// out = in >= 0 ? in : prelu_param[c] * in, per channel (axis 1). Extension beyond
// cnml-subset.md (Cambricon Caffe's PReLU layer, Paddle-Lite's leaky_relu bridge).
// Mock rule: prelu_param is a CONST/FILTER tensor of c values, or of one value shared by
// every channel (Paddle-Lite passes leaky_relu's alpha as [1, 1, 1, 1]).
cnmlStatus_t cnmlCreatePreluOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               cnmlTensor_t prelu_param);
// out[n, co] = sum_k in[n, k] * filter[co, k] + bias[co]; in is read flat per batch item.
// `sparse` as cnmlCreateConvOpParam's (the MLU100 signature).
cnmlStatus_t cnmlCreateMlpOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                             cnmlTensor_t filter, cnmlTensor_t bias, cnmlSparseMode_t sparse);
cnmlStatus_t cnmlCreateSoftmaxOp(cnmlBaseOp_t* op, cnmlDimension_t dim, cnmlTensor_t input,
                                 cnmlTensor_t output);
// Softmax along `axis` (0 <= axis < rank) of a tensor of any rank (later CNML's Nd op, as
// Paddle-Lite calls it; cnmlCreateSoftmaxOp's cnmlDimension_t names NCHW axes).
cnmlStatus_t cnmlCreateNdSoftmaxOp(cnmlBaseOp_t* op, int axis, cnmlTensor_t input,
                                   cnmlTensor_t output);
// Mock op: log(softmax(in)) along `axis` (0 <= axis < rank) as (x - max) - log(sum(exp(x -
// max))), so no exp overflows and no small probability rounds to log(0).
cnmlStatus_t cnmlCreateNdLogSoftmaxOp(cnmlBaseOp_t* op, int axis, cnmlTensor_t input,
                                      cnmlTensor_t output);
// Mock ops (CNML's ReduceSum/ReduceMean/ReduceMax take one cnmlDimension_t; these take a set
// of axes, so a reduction over several is one pass and one rounding): out = the sum, mean,
// max, min or product of `in` over the `axis_num` axes in `axes`. Mock rules: axes distinct,
// ascending, 0 <= axis < rank, axis_num >= 1; out has in's dims with the reduced ones 1, or
// with them removed (the same element order), else INVALIDPARAM. Sums, means and products
// accumulate in double; max and min propagate nan.
cnmlStatus_t cnmlCreateNdReduceSumOp(cnmlBaseOp_t* op, const int axes[], int axis_num,
                                     cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNdReduceMeanOp(cnmlBaseOp_t* op, const int axes[], int axis_num,
                                      cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNdReduceMaxOp(cnmlBaseOp_t* op, const int axes[], int axis_num,
                                     cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNdReduceMinOp(cnmlBaseOp_t* op, const int axes[], int axis_num,
                                     cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNdReduceProdOp(cnmlBaseOp_t* op, const int axes[], int axis_num,
                                      cnmlTensor_t input, cnmlTensor_t output);
// output = input gathered along `dim` (CNML_DIM_N, C, H, W: axes 0..3 of the input) by the
// int32 `index`: output shape input[:dim] + index + input[dim+1:] (embeddings: a
// [vocabulary, width] CNML_CONST table gathered on N by token ids). Mock rules: the input a
// bound CNML_CONST (an embedding table), index a CNML_TENSOR of CNML_DATA_INT32, the
// output's dtype the table's; at forward every index must lie in [0, input[dim])
// (INVALIDPARAM otherwise: negative ids are normalised by the host before).
cnmlStatus_t cnmlCreateGatherV2Op(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t index,
                                  cnmlTensor_t output, cnmlDimension_t dim);
// out[..., m, n] = sum_k A[..., m, k] * B[..., k, n] with A = trans_a ? a^T : a and
// B = trans_b ? b^T : b over the last two axes (Cambricon's TensorFlow lowers BatchMatMul to
// it). Mock rule: both ranks >= 2; the leading (batch) dims broadcast as numpy's (right-
// aligned, each pair equal or one of them 1); out has the broadcast batch dims then m, n.
cnmlStatus_t cnmlCreateBatchDotOp(cnmlBaseOp_t* op, cnmlTensor_t a, cnmlTensor_t b,
                                  cnmlTensor_t output, bool trans_a, bool trans_b);
// Mock op (no LayerNorm in CNML: MeanVarNorm normalises NCHW's C*H*W and Scale is per
// channel, so neither takes a trailing axis with per-element parameters):
// out = (in - mean) / sqrt(var + eps) * scale + bias, mean and (biased) variance over the
// axes axis..rank-1 of each slice. scale and bias are CONST tensors of prod(dims[axis:])
// elements; bias may be null. Mock rule: 0 <= axis < rank, eps >= 0.
cnmlStatus_t cnmlCreateNdLayerNormOp(cnmlBaseOp_t* op, int axis, cnmlTensor_t input,
                                     cnmlTensor_t output, cnmlTensor_t scale,
                                     cnmlTensor_t bias, float eps);
// Mock op, not on every SDK: one direction of an ONNX LSTM / GRU / RNN over a whole
// sequence (CNML has none; Cambricon's Caffe substitutes cells, and callers do so when this
// returns CNML_STATUS_UNSUPPORT: the mock SDK, whose device has no recurrent unit, always
// does; the oneDNN SDK runs it as one oneDNN RNN primitive). input: [T, B, I], or [B, T, I]
// with batch_first; initial_h, initial_c: [B, H] or null (zeros; initial_c only for LSTM);
// output: [T, B, H] ([B, T, H] with batch_first) for CNML_RNN_OUTPUT_Y, else [B, H].
// weight [G*H, I] and recurrence [G*H, H] are FILTER tensors, bias [2*G*H] (Wb then Rb) and
// peephole [3*H] (LSTM, P's i, o, f) CONST tensors or null (zeros), all in ONNX's gate order
// (G = 4, 3 or 1). With `reverse` step t reads input T-1-t, and Y is stored by input time.
// Mock rule: every other shape, a cell/output mismatch or an unbound-type operand ->
// CNML_STATUS_INVALIDPARAM.
cnmlStatus_t cnmlCreateRnnOp(cnmlBaseOp_t* op, cnmlRnnCell_t cell, bool reverse,
                             bool batch_first, cnmlRnnOutput_t output_kind, cnmlTensor_t input,
                             cnmlTensor_t initial_h, cnmlTensor_t initial_c,
                             cnmlTensor_t output, cnmlTensor_t weight, cnmlTensor_t recurrence,
                             cnmlTensor_t bias, cnmlTensor_t peephole);
// Element-wise: out = sqrt(in), 1 / sqrt(in), in ^ power (CNML's Sqrt, Rsqrt, Power).
cnmlStatus_t cnmlCreateSqrtOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateRsqrtOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreatePowerOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               float power);
// Mock ops: out = erf(in); out = GELU(in), exact (x/2 (1 + erf(x/sqrt 2))) or, with
// `approximate`, the tanh form x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
cnmlStatus_t cnmlCreateErfOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateGeluOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                              bool approximate);
// out = exp(in), log(in) (natural; log(0) = -inf, log(x < 0) = nan), |in|, -in (CNML's Exp,
// Log, Abs; Neg is a mock op).
cnmlStatus_t cnmlCreateExpOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateLogOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateAbsOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNegOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
// out = 1.0 where in == 0, else 0.0 (CNML's Not; nan counts as true, so gives 0.0).
cnmlStatus_t cnmlCreateNotOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
// out = sin(in), cos(in), in radians (CNML's Sin and Cos).
cnmlStatus_t cnmlCreateSinOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateCosOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output);
// out = min(max(in, lower_bound), upper_bound) (MLU100 CNML's Clip; ONNX's order: with
// lower_bound > upper_bound every value is upper_bound; a nan input stays nan). Either bound
// may be infinite. Mock rule: a nan bound -> INVALIDPARAM.
cnmlStatus_t cnmlCreateClipOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                              double lower_bound, double upper_bound);
// Inputs are CNML_TENSORs or bound CNML_CONSTs (at least one CNML_TENSOR, else UNSUPPORT);
// the forward takes the CNML_TENSOR inputs only, in order.
cnmlStatus_t cnmlCreateNdConcatOp(cnmlBaseOp_t* op, int dim, cnmlTensor_t inputs[],
                                  int input_num, cnmlTensor_t outputs[], int output_num);
cnmlStatus_t cnmlCreateLrnOp(cnmlBaseOp_t* op, cnmlLrnOpParam_t param, cnmlTensor_t input,
                             cnmlTensor_t output);
cnmlStatus_t cnmlCreateReshapeOp(cnmlBaseOp_t* op, cnmlReshapeOpParam_t param,
                                 cnmlTensor_t input, cnmlTensor_t output);
cnmlStatus_t cnmlCreateNdTransposeProOp(cnmlBaseOp_t* op, cnmlTensor_t input,
                                        cnmlTensor_t output, cnmlTransposeOpParam_t param);
// Output dims must equal what the param selects from the input (same rank).
cnmlStatus_t cnmlCreateNdStridedSliceOp(cnmlBaseOp_t* op, cnmlNdStridedSliceOpParam_t param,
                                        cnmlTensor_t input, cnmlTensor_t output);
// Filter [ci, co, kh, kw] (ONNX ConvTranspose's and Caffe's Deconvolution layout); bias [co]
// or NULL. Input and output 4-D NCHW; output [n, co, H_out, W_out] as the param gives
// (H_out >= 1), else INVALIDPARAM.
cnmlStatus_t cnmlCreateDeconvOp(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param, cnmlTensor_t input,
                                cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias);
// Extension beyond CNML (mock), like cnmlCreateConvGroupOp: filter [ci, co / group, kh, kw];
// group divides ci and co (else INVALIDPARAM).
cnmlStatus_t cnmlCreateDeconvGroupOp(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param,
                                     cnmlTensor_t input, cnmlTensor_t output,
                                     cnmlTensor_t filter, cnmlTensor_t bias, int group);
// Input and output 4-D NCHW with equal N and C; output H and W must be the param's sizes
// (else INVALIDPARAM). The param is last, as in CNML.
cnmlStatus_t cnmlCreateNearestNeighborOp(cnmlBaseOp_t* op, cnmlTensor_t input,
                                         cnmlTensor_t output,
                                         cnmlNearestNeighborOpParam_t param);
cnmlStatus_t cnmlCreateInterpOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                                cnmlInterpOpParam_t param);
// Element-wise dtype conversion; input and output of equal dims. Mock rules: FLOAT32_TO_FLOAT16
// (round to nearest even, numerics.h) and FLOAT16_TO_FLOAT32 (exact) only, other cast types
// -> UNSUPPORT; operand dtypes not those of the cast type -> INVALIDARG; a value outside the
// enum -> INVALIDPARAM.
cnmlStatus_t cnmlCreateCastOp(cnmlBaseOp_t* op, cnmlCastType_t cast_type, cnmlTensor_t input,
                              cnmlTensor_t output);

// ---- compile -----------------------------------------------------------------
// core_limit: cores the op is compiled for. Mock rule: 1..32 on MLU100, else INVALIDPARAM.
// Mock rules on precision (at op creation: INVALIDARG): every activation input and output
// of an op other than Cast has one dtype. At compile (INVALIDARG): consts of an fp32 op are
// FLOAT32, of an fp16 op FLOAT16, except an int8 op's INT8 filter; an INT8 filter needs the
// op's input in int8 compute (cnmlSetOperationComputingDataType); an int8 op with a
// reduction longer than 133143 (int32 overflow) -> UNSUPPORT.
cnmlStatus_t cnmlCompileBaseOp(cnmlBaseOp_t op, cnmlCoreVersion_t version, int core_limit);
cnmlStatus_t cnmlDestroyBaseOp(cnmlBaseOp_t* op);

#ifdef __cplusplus
}
#endif

#endif  // PALEOZOIC_SDK_CNML_OPS_H_
