// CNML setup, tensors, quantisation and operator parameters (through cnml.h).
#ifndef PALEOZOIC_SDK_CNML_TENSORS_H_
#define PALEOZOIC_SDK_CNML_TENSORS_H_

#include "cnml_types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif  // PALEOZOIC_SDK_CNML_TENSORS_H_
