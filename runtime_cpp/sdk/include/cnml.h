// CNML subset used by Paleozoic (Cambricon Neuware machine-learning library, G3 names).
//
// Names, parameter order and enum values follow the public cnml.h of CNML 7.2/7.3
// (docs: cnml-subset.md). Only the calls Paleozoic emits are declared. The CPU mock
// (runtime_cpp/mock) implements them with FLOAT32, FLOAT16 and (conv/mlp filters) INT8 data,
// emulating the fp16/int8 arithmetic bit for bit as runtime_cpp/mock/numerics.h states; its
// own rules are marked "Mock rule".
#ifndef PALEOZOIC_SDK_CNML_H_
#define PALEOZOIC_SDK_CNML_H_

#include <stdbool.h>
#include <stddef.h>

#include "cnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CNML_STATUS_NODEVICE = -1,
  CNML_STATUS_SUCCESS = 0,
  CNML_STATUS_DOMAINERR = 1,
  CNML_STATUS_INVALIDARG = 2,
  CNML_STATUS_LENGTHERR = 3,
  CNML_STATUS_OUTOFRANGE = 4,
  CNML_STATUS_RANGEERR = 5,
  CNML_STATUS_OVERFLOWERR = 6,
  CNML_STATUS_UNDERFLOWERR = 7,
  CNML_STATUS_INVALIDPARAM = 8,
  CNML_STATUS_BADALLOC = 9,
  CNML_STATUS_BADTYPEID = 10,
  CNML_STATUS_BADCAST = 11,
  CNML_STATUS_UNSUPPORT = 12
} cnmlStatus_t;

typedef enum {
  CNML_TENSOR = 0,
  CNML_FILTER = 1,
  CNML_CONST = 2,
  CNML_VARIABLE = 3
} cnmlTensorType_t;

typedef enum {
  CNML_DATA_INVALID = 0,
  CNML_DATA_FLOAT16 = 1,
  CNML_DATA_FLOAT32 = 2,
  CNML_DATA_DOUBLE = 3,
  CNML_DATA_FIX8 = 4,
  CNML_DATA_INT8 = 4,
  CNML_DATA_INT16 = 6,
  CNML_DATA_INT32 = 7,
  CNML_DATA_UINT8 = 8,
  CNML_DATA_UINT16 = 9,
  CNML_DATA_UINT32 = 10,
  CNML_DATA_QUANT8 = 11,
  CNML_DATA_BINARY = 12,
  CNML_DATA_BOOL = 13,
  CNML_DATA_INT4 = 14
} cnmlDataType_t;

typedef enum {
  CNML_1H8 = 1,
  CNML_1H16 = 2,
  CNML_C10 = 3,
  CNML_MLU100 = 3,
  CNML_1H8MINI = 4,
  CNML_MLU270 = 5,
  CNML_MLU220 = 6
} cnmlCoreVersion_t;

typedef enum {
  CNML_POOL_AVG = 0,
  CNML_POOL_MAX = 1,
  CNML_POOL_MAXINDEX = 2,
  CNML_POOL_SUM = 3,
  CNML_POOL_BLEND = 4
} cnmlPoolMode_t;

// KFULL: the last window may overrun the edge (ceil); KVALID: floor.
typedef enum { CNML_POOL_KFULL = 0, CNML_POOL_KVALID = 1 } cnmlPoolStrategyMode_t;

typedef enum {
  CNML_ACTIVE_NONE = 0,
  CNML_ACTIVE_SIGMOID = 1,
  CNML_ACTIVE_RELU = 2,
  CNML_ACTIVE_TANH = 3,
  CNML_ACTIVE_RELU1 = 4,
  CNML_ACTIVE_RELU6 = 5,
  CNML_ACTIVE_HARD_SIGMOID = 6
} cnmlActiveFunction_t;

typedef enum {
  CNML_DIM_N = 0,
  CNML_DIM_C = 1,
  CNML_DIM_H = 2,
  CNML_DIM_W = 3,
  CNML_DIM_HW = 4,
  CNML_DIM_T = 5
} cnmlDimension_t;

typedef enum {
  CNML_LRN_V1 = 0,  // x / (k + alpha * S / m)^beta, m = min(local_size, 2c - 1)
  CNML_LRN_V2 = 1,  // x / (k + alpha * S)^beta
  CNML_LRN_V3 = 2   // x / (k + alpha * S / local_size)^beta
} cnmlLrnType_t;

// Extension beyond cnml-subset.md (mock): how Interp / NearestNeighbor map an output pixel to
// the input, as ONNX Resize's coordinate_transformation_mode with scale = out / in:
//   HALF_PIXEL          x_in = (x_out + 0.5) / scale - 0.5
//   PYTORCH_HALF_PIXEL  the same, but 0 when the output length is 1
//   ALIGN_CORNERS       x_in = x_out * (in - 1) / (out - 1), 0 when out == 1
//   ASYMMETRIC          x_in = x_out / scale
// CNML itself only has an align_corners flag (true: ALIGN_CORNERS, false: ASYMMETRIC).
typedef enum {
  CNML_INTERP_ASYMMETRIC = 0,
  CNML_INTERP_ALIGN_CORNERS = 1,
  CNML_INTERP_HALF_PIXEL = 2,
  CNML_INTERP_PYTORCH_HALF_PIXEL = 3
} cnmlInterpCoordinateMode_t;

// Extension beyond cnml-subset.md (mock): how NearestNeighbor rounds x_in to an input index
// (ONNX Resize's nearest_mode); the index is then clamped to [0, in - 1].
typedef enum {
  CNML_NEAREST_ROUND_PREFER_FLOOR = 0,  // round half down
  CNML_NEAREST_ROUND_PREFER_CEIL = 1,   // round half up
  CNML_NEAREST_FLOOR = 2,
  CNML_NEAREST_CEIL = 3
} cnmlNearestNeighborRoundMode_t;

// Extension beyond cnml-subset.md (SDKs whose library has a recurrent primitive): the cell
// of cnmlCreateRnnOp, with ONNX's gate order and equations (LSTM i, o, f, c; GRU z, r, h
// with linear_before_reset off or on; RNN with tanh, relu or sigmoid).
typedef enum {
  CNML_RNN_LSTM = 0,
  CNML_RNN_GRU = 1,
  CNML_RNN_GRU_LINEAR_BEFORE_RESET = 2,
  CNML_RNN_TANH = 3,
  CNML_RNN_RELU = 4,
  CNML_RNN_SIGMOID = 5
} cnmlRnnCell_t;

// Which value cnmlCreateRnnOp's output holds: every step's h, the last h, the last c (LSTM).
typedef enum { CNML_RNN_OUTPUT_Y = 0, CNML_RNN_OUTPUT_H = 1, CNML_RNN_OUTPUT_C = 2 } cnmlRnnOutput_t;

typedef struct cnmlTensor* cnmlTensor_t;
typedef struct cnmlBaseOp* cnmlBaseOp_t;
typedef struct cnmlFusionOp* cnmlFusionOp_t;
typedef struct cnmlConvOpParam* cnmlConvOpParam_t;
typedef struct cnmlPoolOpParam* cnmlPoolOpParam_t;
typedef struct cnmlLrnOpParam* cnmlLrnOpParam_t;
typedef struct cnmlReshapeOpParam* cnmlReshapeOpParam_t;
typedef struct cnmlTransposeOpParam* cnmlTransposeOpParam_t;
typedef struct cnmlNdStridedSliceOpParam* cnmlNdStridedSliceOpParam_t;
typedef struct cnmlDeconvOpParam* cnmlDeconvOpParam_t;
typedef struct cnmlNearestNeighborOpParam* cnmlNearestNeighborOpParam_t;
typedef struct cnmlInterpOpParam* cnmlInterpOpParam_t;
typedef struct cnmlQuantizedParam* cnmlQuantizedParam_t;

// Cast op types (CNML G2/G3 values). The mock implements FLOAT16_TO_FLOAT32 and
// FLOAT32_TO_FLOAT16; the others -> CNML_STATUS_UNSUPPORT at creation.
typedef enum {
  CNML_CAST_FLOAT32_TO_UINT8 = 0,
  CNML_CAST_UINT8_TO_FLOAT32 = 1,
  CNML_CAST_FIX8_TO_FLOAT16 = 3,
  CNML_CAST_FLOAT16_TO_FLOAT32 = 4,
  CNML_CAST_FLOAT16_TO_FIX8 = 5,
  CNML_CAST_FLOAT32_TO_FLOAT16 = 6,
  CNML_CAST_INT16_TO_FLOAT16 = 7,
  CNML_CAST_FLOAT16_TO_INT16 = 8
} cnmlCastType_t;

// MLU100 (CNML 6 and before; gone in CNML 7): whether a convolution or fully connected op
// may skip its zero weights, in pairs: output channels 2i and 2i+1 at the same kernel
// position, both zero (Cambricon Caffe prunes so, sparseFilter).
typedef enum {
  CNML_NoSparse = 0,
  CNML_Sparse = 1
} cnmlSparseMode_t;

// Where a fusion I/O tensor's conversion between its host form (the twin CPU tensor's dtype)
// and its device form runs (CNML 6, MLU100; `-datastrategy` in Cambricon Caffe). The mock
// keeps NCHW on both sides, so the conversion is the dtype cast:
//   CNML_CPU_PRIORITY: the host casts; the device buffer holds the device dtype.
//   CNML_MLU_PRIORITY: the fusion op casts on the device as it reads (an input) or writes
//     (an output) the tensor; the device buffer holds the twin's dtype.
//   CNML_CPU_MLU_BALANCE: the mock resolves it, when set, to the side its device model
//     prices lower for the tensor (cnmlMockGetDataPreprocessStrategy reads which).
//   CNML_NO_PREPROCESS: nothing converts; the twin must have the device dtype.
typedef enum {
  CNML_CPU_MLU_BALANCE = 0,
  CNML_CPU_PRIORITY = 1,
  CNML_MLU_PRIORITY = 2,
  CNML_NO_PREPROCESS = 3
} cnmlDataPreprocessStrategy_t;

typedef enum { CNML_NCHW = 0, CNML_NHWC = 1 } cnmlDataOrder_t;

// ---- setup -------------------------------------------------------------------
cnmlStatus_t cnmlInit(int flag);
cnmlStatus_t cnmlExit(void);

// ---- tensors -----------------------------------------------------------------
// Mock rule: device buffers are dense in the logical (NCHW / N-D row-major) order, in the
// tensor's dtype: FLOAT32 4 bytes, FLOAT16 2 bytes (IEEE binary16), INT8 1 byte, INT32 4,
// UINT8 1.
// cnmlSetTensorDataType: CNML_TENSOR FLOAT32, FLOAT16, INT32 (GatherV2's indices) or UINT8;
// CNML_FILTER FLOAT32, FLOAT16 or
// INT8; CNML_CONST FLOAT32 or FLOAT16; anything else UNSUPPORT (VARIABLE: FLOAT32 only).
// Changing the dtype of a bound FILTER/CONST -> INVALIDARG. The default dtype is FLOAT32.
// cnmlGetTensorSize_V2 = elements x element size of the dtype.
cnmlStatus_t cnmlCreateTensor_V2(cnmlTensor_t* tensor, cnmlTensorType_t tensor_type);
cnmlStatus_t cnmlSetTensorShape_V2(cnmlTensor_t tensor, int dim_num, int dim_values[],
                                   int dim_strides[]);
cnmlStatus_t cnmlSetTensorDataType(cnmlTensor_t tensor, cnmlDataType_t data_type);
cnmlStatus_t cnmlGetTensorSize_V2(cnmlTensor_t tensor, size_t* size);
cnmlStatus_t cnmlGetTensorDataType(cnmlTensor_t tensor, cnmlDataType_t* data_type);
cnmlStatus_t cnmlDestroyTensor(cnmlTensor_t* tensor);

// A host tensor's description (a data-preprocess twin). Mock rules: null -> INVALIDPARAM;
// a dtype other than FLOAT32 or FLOAT16, an order other than NCHW, or a dim below 1 ->
// INVALIDARG. A device tensor of any rank pairs with a twin of the same element count.
typedef struct cnmlCpuTensor* cnmlCpuTensor_t;
cnmlStatus_t cnmlCreateCpuTensor(cnmlCpuTensor_t* cpu_tensor, cnmlTensorType_t tensor_type,
                                 cnmlDataType_t data_type, cnmlDataOrder_t data_order, int n,
                                 int c, int h, int w);
cnmlStatus_t cnmlDestroyCpuTensor(cnmlCpuTensor_t* cpu_tensor);
// Mock rules: null tensor or twin -> INVALIDPARAM; a strategy out of range, a tensor that
// is not a shaped CNML_TENSOR of FLOAT32 or FLOAT16, a twin of another element count, or
// CNML_NO_PREPROCESS with a twin of another dtype -> INVALIDARG. It takes effect at
// cnmlSetFusionIO: a forward passing the tensor to a base op, or to a fusion op whose I/O
// was set before the strategy changed, -> INVALIDARG (the strategy is for fusion I/O only).
cnmlStatus_t cnmlSetDataPreprocessStrategy(cnmlTensor_t tensor, cnmlCpuTensor_t twins_cpu_tensor,
                                           cnmlDataPreprocessStrategy_t dps);
// FILTER / CONST tensors only; data is in the tensor's dtype (elements x element size
// bytes: fp32, binary16 bits, or int8 q values) and copied at bind time.
cnmlStatus_t cnmlBindConstData_V2(cnmlTensor_t tensor, void* cpu_tensor_ptr,
                                  bool free_aftercompile);

// ---- quantisation (G3) ----------------------------------------------------------
// A quantised value q stands for q * 2^position / scale (numerics.h). Mock rules: position
// in [-32, 32] and scale finite and > 0, else INVALIDARG; offset != 0 -> UNSUPPORT (the
// mock is symmetric only); null pointers -> INVALIDPARAM.
cnmlStatus_t cnmlCreateQuantizedParam(cnmlQuantizedParam_t* param, int position, float scale,
                                      float offset);
cnmlStatus_t cnmlDestroyQuantizedParam(cnmlQuantizedParam_t* param);
// Sets the on-chip dtype of one operand of an op. Mock rules: only CNML_DATA_INT8 on the
// activation input of a Conv, ConvGroup (incl. depthwise) or Mlp op; the op copies the
// param (it may be destroyed right after). Another dtype, or another op kind -> UNSUPPORT;
// a tensor that is not the op's activation input, or a null param -> INVALIDPARAM; after
// the op was compiled or fused -> INVALIDARG. At compile, an int8 op needs FLOAT16
// activations, a FLOAT16 bias (or none) and an INT8 filter whose position and scale are
// set per tensor or per output channel (channel_num == output channels), else INVALIDARG.
cnmlStatus_t cnmlSetOperationComputingDataType(cnmlBaseOp_t op, cnmlTensor_t tensor,
                                               cnmlDataType_t dtype,
                                               cnmlQuantizedParam_t param);
// Quantisation of a (filter) tensor, per tensor or per channel (axis 0 of the filter).
// Ranges as cnmlCreateQuantizedParam (INVALIDARG); null arrays or channel_num < 1 ->
// INVALIDPARAM. Setting one form replaces the other for that quantity.
cnmlStatus_t cnmlSetQuantizedPosition(cnmlTensor_t tensor, int position);
cnmlStatus_t cnmlSetQuantizedScale(cnmlTensor_t tensor, float scale);
cnmlStatus_t cnmlSetQuantizedPositionByChannel(cnmlTensor_t tensor, int* positions,
                                               int channel_num);
cnmlStatus_t cnmlSetQuantizedScaleByChannel(cnmlTensor_t tensor, float* scales,
                                            int channel_num);

// ---- operator parameters ----------------------------------------------------
cnmlStatus_t cnmlCreateConvOpParam_V2(cnmlConvOpParam_t* param, int stride_height,
                                      int stride_width, int dilation_height, int dilation_width,
                                      int pad_height_top, int pad_height_bottom,
                                      int pad_width_left, int pad_width_right);
// The MLU100 form: one pad per axis, the total of both sides, split evenly (an odd total ->
// INVALIDPARAM), and the sparse mode. Mock rule: a sparse param serves cnmlCreateConvOp only
// (a group conv has no sparse mode: INVALIDARG); the mock computes the same numbers either
// way, and its device time skips the zero pairs of the bound filter.
cnmlStatus_t cnmlCreateConvOpParam(cnmlConvOpParam_t* param, int stride_height, int stride_width,
                                   int dilation_height, int dilation_width, int pad_height,
                                   int pad_width, cnmlSparseMode_t sparse);
cnmlStatus_t cnmlDestroyConvOpParam(cnmlConvOpParam_t* param);

cnmlStatus_t cnmlCreatePoolOpParam_V3(cnmlPoolOpParam_t* param, int window_height,
                                      int window_width, int stride_height, int stride_width,
                                      int pad_height_top, int pad_height_bottom,
                                      int pad_width_left, int pad_width_right,
                                      int dilation_height, int dilation_width,
                                      cnmlPoolMode_t pool_mode,
                                      cnmlPoolStrategyMode_t strategy_mode, bool real,
                                      float blend_factor);
cnmlStatus_t cnmlDestroyPoolOpParam(cnmlPoolOpParam_t* param);

cnmlStatus_t cnmlCreateLrnOpParam(cnmlLrnOpParam_t* param, cnmlLrnType_t lrn_type,
                                  int local_size, double alph, double beta, double k);
cnmlStatus_t cnmlDestroyLrnOpParam(cnmlLrnOpParam_t* param);

cnmlStatus_t cnmlCreateNdReshapeOpParam(cnmlReshapeOpParam_t* param, int dims[], int dim_num);
cnmlStatus_t cnmlDestroyReshapeOpParam(cnmlReshapeOpParam_t* param);

cnmlStatus_t cnmlCreateNdTransposeOpParam(cnmlTransposeOpParam_t* param, int dim_order[],
                                          int dim_num);
cnmlStatus_t cnmlDestroyTransposeOpParam(cnmlTransposeOpParam_t* param);

// Extension beyond cnml-subset.md (names and parameter order from Cambricon's MLU bridges
// of TensorFlow and Paddle-Lite): one begin, end and stride per input axis, output dim
// ceil((end - begin) / stride). Mock rule: indices come normalised (no negative indices, no
// masks): 0 <= begin < end, stride >= 1, else INVALIDPARAM; a negative stride (reversing)
// -> UNSUPPORT; dim_num 1..6; end <= the input dim is checked when the op is created.
cnmlStatus_t cnmlCreateNdStridedSliceOpParam(cnmlNdStridedSliceOpParam_t* param, int dim_num,
                                             int begin[], int end[], int stride[]);
cnmlStatus_t cnmlDestroyNdStridedSliceOpParam(cnmlNdStridedSliceOpParam_t* param);

// Deconvolution (names and parameter order from Cambricon's Caffe and TensorFlow bridges;
// beyond cnml-subset.md). The op computes the full transposed convolution, H_full =
// (H_in - 1) * stride + dilation * (kh - 1) + 1, and crops hu rows from its top, hd from its
// bottom, wl and wr columns from its left and right (ONNX ConvTranspose's pads).
// Mock rules: stride >= 1, crops >= 0, else INVALIDPARAM; H_full as ONNX (Cambricon Caffe
// adds stride - kh to hd when stride > kh, which suggests the device's uncropped output is
// (H_in - 1) * stride + max(kh, stride); the mock does not model that).
cnmlStatus_t cnmlCreateDeconvOpParam(cnmlDeconvOpParam_t* param, int stride_height,
                                     int stride_width, int hu, int hd, int wl, int wr);
// Extension beyond CNML (mock): the same with dilation and ONNX's output_padding, which adds
// output_pad_height rows below (output_pad_width columns right of) the cropped output; rows
// past the full output hold the bias only. H_out = H_full - hu - hd + output_pad_height.
// (CNML 7.x has a `_V3` with dilations whose exact parameter list is not public.)
// Mock rules: dilation >= 1, 0 <= output padding < max(stride, dilation) per axis (ONNX's
// and PyTorch's rule), else INVALIDPARAM.
cnmlStatus_t cnmlCreateDeconvOpParam_V2(cnmlDeconvOpParam_t* param, int stride_height,
                                        int stride_width, int dilation_height,
                                        int dilation_width, int hu, int hd, int wl, int wr,
                                        int output_pad_height, int output_pad_width);
cnmlStatus_t cnmlDestroyDeconvOpParam(cnmlDeconvOpParam_t* param);

// Nearest-neighbour resize of H and W (Cambricon's Caffe Upsample, TensorFlow and Paddle-Lite
// bridges; beyond cnml-subset.md). Note the order: width, then height.
// Mock rules: output sizes >= 1, else INVALIDPARAM; the default mapping is ASYMMETRIC with
// FLOOR (TensorFlow's resize_nearest_neighbor), and cnmlSetNearestNeighborAlignCorner(true)
// selects ALIGN_CORNERS with ROUND_PREFER_CEIL (TensorFlow's align_corners=True rounds half
// away from zero), false the default again.
cnmlStatus_t cnmlCreateNearestNeighborOpParam(cnmlNearestNeighborOpParam_t* param,
                                              int output_width, int output_height);
cnmlStatus_t cnmlSetNearestNeighborAlignCorner(cnmlNearestNeighborOpParam_t* param,
                                               bool align_corners);
// Extensions beyond CNML (mock): any ONNX Resize coordinate mode and nearest rounding.
// A value outside the enum -> INVALIDPARAM.
cnmlStatus_t cnmlSetNearestNeighborCoordinateMode(cnmlNearestNeighborOpParam_t* param,
                                                  cnmlInterpCoordinateMode_t mode);
cnmlStatus_t cnmlSetNearestNeighborRoundMode(cnmlNearestNeighborOpParam_t* param,
                                             cnmlNearestNeighborRoundMode_t mode);
cnmlStatus_t cnmlDestroyNearestNeighborOpParam(cnmlNearestNeighborOpParam_t* param);

// Bilinear resize of H and W (Cambricon's Caffe Interp layer, TensorFlow bridge; beyond
// cnml-subset.md). align_corners true: ALIGN_CORNERS, false: ASYMMETRIC (TensorFlow's
// resize_bilinear). Sampling as ONNX Resize linear: x_in clamped to [0, in - 1], then the
// two neighbours floor(x_in) and floor(x_in) + 1 (clamped) weighted by distance.
// Mock rule: output sizes >= 1, else INVALIDPARAM.
cnmlStatus_t cnmlCreateInterpOpParam(cnmlInterpOpParam_t* param, int output_width,
                                     int output_height, bool align_corners);
// Extension beyond CNML (mock): any ONNX Resize coordinate mode (outside the enum ->
// INVALIDPARAM).
cnmlStatus_t cnmlSetInterpCoordinateMode(cnmlInterpOpParam_t* param,
                                         cnmlInterpCoordinateMode_t mode);
cnmlStatus_t cnmlDestroyInterpOpParam(cnmlInterpOpParam_t* param);

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

#endif  // PALEOZOIC_SDK_CNML_H_
