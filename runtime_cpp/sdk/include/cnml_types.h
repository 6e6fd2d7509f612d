// CNML statuses, enums and handle types (cnml.h includes every CNML header).
#ifndef PALEOZOIC_SDK_CNML_TYPES_H_
#define PALEOZOIC_SDK_CNML_TYPES_H_

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

#ifdef __cplusplus
}
#endif

#endif  // PALEOZOIC_SDK_CNML_TYPES_H_
