// Operator parameter objects: validated here so op creation only checks shapes.
#include <algorithm>

#include "call_log.h"
#include "state.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), destroyLogged(), Call

namespace {

// *param = a new param object holding make()'s contents. make() runs inside the guard, so
// that contents which allocate (the Dims of reshape, transpose and slice) fail as BADALLOC too.
template <typename Param, typename Make>
cnmlStatus_t newParam(Param** param, Make make) {
  return guarded(CNML_STATUS_BADALLOC, [&] {
    *param = new Param{make()};
    return CNML_STATUS_SUCCESS;
  });
}

bool validCoordinateMode(cnmlInterpCoordinateMode_t mode) {
  return mode >= CNML_INTERP_ASYMMETRIC && mode <= CNML_INTERP_PYTORCH_HALF_PIXEL;
}

// NearestNeighbor and Interp params hold the same InterpParams (Interp ignores the rounding).
template <typename Param>
cnmlStatus_t newResizeParam(Param** param, int output_width, int output_height,
                            cnmlInterpCoordinateMode_t coords) {
  if (!param || output_width < 1 || output_height < 1) return CNML_STATUS_INVALIDPARAM;
  return newParam(param, [&] {
    InterpParams p;
    p.out_h = output_height;
    p.out_w = output_width;
    p.coords = coords;
    return p;
  });
}

template <typename Param>
cnmlStatus_t setCoordinateMode(const char* fn, Param** param, cnmlInterpCoordinateMode_t mode) {
  if (!param || !*param || !validCoordinateMode(mode)) return CNML_STATUS_INVALIDPARAM;
  (*param)->p.coords = mode;
  return logged(CNML_STATUS_SUCCESS, fn, [&](Call& c) { c.handleRef(param).value(mode); });
}

// Both deconv param creators (the plain one is _V2 without dilation or output padding); the
// public ones each record themselves.
cnmlStatus_t createDeconvParam(cnmlDeconvOpParam_t* param, int stride_height, int stride_width,
                               int dilation_height, int dilation_width, int hu, int hd, int wl,
                               int wr, int output_pad_height, int output_pad_width) {
  if (!param) return CNML_STATUS_INVALIDPARAM;
  if (stride_height < 1 || stride_width < 1 || dilation_height < 1 || dilation_width < 1 ||
      hu < 0 || hd < 0 || wl < 0 || wr < 0)
    return CNML_STATUS_INVALIDPARAM;
  // ONNX / PyTorch: output padding below the stride or the dilation of its axis.
  if (output_pad_height < 0 || output_pad_width < 0 ||
      output_pad_height >= std::max(stride_height, dilation_height) ||
      output_pad_width >= std::max(stride_width, dilation_width))
    return CNML_STATUS_INVALIDPARAM;
  return newParam(param, [&] {
    return DeconvParams{stride_height, stride_width, dilation_height, dilation_width, hu, hd,
                        wl, wr, output_pad_height, output_pad_width};
  });
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlCreateConvOpParam_V2(cnmlConvOpParam_t* param, int stride_height,
                                      int stride_width, int dilation_height, int dilation_width,
                                      int pad_height_top, int pad_height_bottom,
                                      int pad_width_left, int pad_width_right) {
  if (!param) return CNML_STATUS_INVALIDPARAM;
  if (stride_height < 1 || stride_width < 1 || dilation_height < 1 || dilation_width < 1 ||
      pad_height_top < 0 || pad_height_bottom < 0 || pad_width_left < 0 || pad_width_right < 0)
    return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = newParam(param, [&] {
    return ConvParams{stride_height, stride_width, dilation_height, dilation_width,
                      pad_height_top, pad_height_bottom, pad_width_left, pad_width_right};
  });
  return logged(status, "cnmlCreateConvOpParam_V2", [&](Call& c) {
    c.created(param).value(stride_height).value(stride_width).value(dilation_height)
        .value(dilation_width).value(pad_height_top).value(pad_height_bottom).value(pad_width_left)
        .value(pad_width_right);
  });
}
cnmlStatus_t cnmlCreateConvOpParam(cnmlConvOpParam_t* param, int stride_height, int stride_width,
                                   int dilation_height, int dilation_width, int pad_height,
                                   int pad_width, cnmlSparseMode_t sparse) {
  if (!param) return CNML_STATUS_INVALIDPARAM;
  if (stride_height < 1 || stride_width < 1 || dilation_height < 1 || dilation_width < 1 ||
      pad_height < 0 || pad_width < 0 || pad_height % 2 || pad_width % 2 ||
      (sparse != CNML_NoSparse && sparse != CNML_Sparse))
    return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = newParam(param, [&] {
    return ConvParams{stride_height, stride_width, dilation_height, dilation_width,
                      pad_height / 2, pad_height / 2, pad_width / 2, pad_width / 2,
                      sparse == CNML_Sparse};
  });
  return logged(status, "cnmlCreateConvOpParam", [&](Call& c) {
    c.created(param).value(stride_height).value(stride_width).value(dilation_height)
        .value(dilation_width).value(pad_height).value(pad_width).value(sparse);
  });
}
cnmlStatus_t cnmlDestroyConvOpParam(cnmlConvOpParam_t* param) {
  return destroyLogged("cnmlDestroyConvOpParam", param);
}

cnmlStatus_t cnmlCreatePoolOpParam_V3(cnmlPoolOpParam_t* param, int window_height,
                                      int window_width, int stride_height, int stride_width,
                                      int pad_height_top, int pad_height_bottom,
                                      int pad_width_left, int pad_width_right,
                                      int dilation_height, int dilation_width,
                                      cnmlPoolMode_t pool_mode,
                                      cnmlPoolStrategyMode_t strategy_mode, bool real,
                                      float blend_factor) {
  if (!param) return CNML_STATUS_INVALIDPARAM;
  if (window_height < 1 || window_width < 1 || stride_height < 1 || stride_width < 1 ||
      dilation_height < 1 || dilation_width < 1 || pad_height_top < 0 ||
      pad_height_bottom < 0 || pad_width_left < 0 || pad_width_right < 0)
    return CNML_STATUS_INVALIDPARAM;
  if (strategy_mode != CNML_POOL_KFULL && strategy_mode != CNML_POOL_KVALID)
    return CNML_STATUS_INVALIDPARAM;
  if (pool_mode < CNML_POOL_AVG || pool_mode > CNML_POOL_BLEND) return CNML_STATUS_INVALIDPARAM;
  if (pool_mode != CNML_POOL_AVG && pool_mode != CNML_POOL_MAX) return CNML_STATUS_UNSUPPORT;
  const cnmlStatus_t status = newParam(param, [&] {
    PoolParams p;
    p.kh = window_height;
    p.kw = window_width;
    p.sh = stride_height;
    p.sw = stride_width;
    p.pt = pad_height_top;
    p.pb = pad_height_bottom;
    p.pl = pad_width_left;
    p.pr = pad_width_right;
    p.dh = dilation_height;
    p.dw = dilation_width;
    p.mode = pool_mode;
    p.strategy = strategy_mode;
    p.real = real;
    p.blend = blend_factor;
    return p;
  });
  return logged(status, "cnmlCreatePoolOpParam_V3", [&](Call& c) {
    c.created(param).value(window_height).value(window_width).value(stride_height)
        .value(stride_width).value(pad_height_top).value(pad_height_bottom).value(pad_width_left)
        .value(pad_width_right).value(dilation_height).value(dilation_width).value(pool_mode)
        .value(strategy_mode).value(real).value(blend_factor);
  });
}
cnmlStatus_t cnmlDestroyPoolOpParam(cnmlPoolOpParam_t* param) {
  return destroyLogged("cnmlDestroyPoolOpParam", param);
}

cnmlStatus_t cnmlCreateLrnOpParam(cnmlLrnOpParam_t* param, cnmlLrnType_t lrn_type,
                                  int local_size, double alph, double beta, double k) {
  if (!param) return CNML_STATUS_INVALIDPARAM;
  if (lrn_type < CNML_LRN_V1 || lrn_type > CNML_LRN_V3 || local_size < 1)
    return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status =
      newParam(param, [&] { return LrnParams{lrn_type, local_size, alph, beta, k}; });
  return logged(status, "cnmlCreateLrnOpParam", [&](Call& c) {
    c.created(param).value(lrn_type).value(local_size).value(alph).value(beta).value(k);
  });
}
cnmlStatus_t cnmlDestroyLrnOpParam(cnmlLrnOpParam_t* param) {
  return destroyLogged("cnmlDestroyLrnOpParam", param);
}

cnmlStatus_t cnmlCreateNdReshapeOpParam(cnmlReshapeOpParam_t* param, int dims[], int dim_num) {
  if (!param || !dims || dim_num < 1 || dim_num > kMaxDims) return CNML_STATUS_INVALIDPARAM;
  for (int i = 0; i < dim_num; ++i)
    if (dims[i] <= 0) return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = newParam(param, [&] { return Dims(dims, dims + dim_num); });
  return logged(status, "cnmlCreateNdReshapeOpParam", [&](Call& c) {
    c.created(param).ints("dims", dims, dim_num).value(dim_num);
  });
}
cnmlStatus_t cnmlDestroyReshapeOpParam(cnmlReshapeOpParam_t* param) {
  return destroyLogged("cnmlDestroyReshapeOpParam", param);
}

cnmlStatus_t cnmlCreateNdTransposeOpParam(cnmlTransposeOpParam_t* param, int dim_order[],
                                          int dim_num) {
  if (!param || !dim_order || dim_num < 1 || dim_num > kMaxDims) return CNML_STATUS_INVALIDPARAM;
  std::vector<bool> seen(dim_num, false);
  for (int i = 0; i < dim_num; ++i) {
    if (dim_order[i] < 0 || dim_order[i] >= dim_num || seen[dim_order[i]])
      return CNML_STATUS_INVALIDPARAM;
    seen[dim_order[i]] = true;
  }
  const cnmlStatus_t status =
      newParam(param, [&] { return Dims(dim_order, dim_order + dim_num); });
  return logged(status, "cnmlCreateNdTransposeOpParam", [&](Call& c) {
    c.created(param).ints("order", dim_order, dim_num).value(dim_num);
  });
}
cnmlStatus_t cnmlDestroyTransposeOpParam(cnmlTransposeOpParam_t* param) {
  return destroyLogged("cnmlDestroyTransposeOpParam", param);
}

// Indices arrive normalised (Mock rule, cnml.h): a negative stride would reverse the axis,
// which the mock does not implement (UNSUPPORT); everything else out of range is a bad
// parameter. end is checked against the input dim when the op is created.
cnmlStatus_t cnmlCreateNdStridedSliceOpParam(cnmlNdStridedSliceOpParam_t* param, int dim_num,
                                             int begin[], int end[], int stride[]) {
  if (!param || !begin || !end || !stride || dim_num < 1 || dim_num > kMaxDims)
    return CNML_STATUS_INVALIDPARAM;
  for (int i = 0; i < dim_num; ++i)
    if (stride[i] < 0) return CNML_STATUS_UNSUPPORT;
  for (int i = 0; i < dim_num; ++i)
    if (stride[i] == 0 || begin[i] < 0 || end[i] <= begin[i]) return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = newParam(param, [&] {
    return SliceParams{Dims(begin, begin + dim_num), Dims(end, end + dim_num),
                       Dims(stride, stride + dim_num)};
  });
  return logged(status, "cnmlCreateNdStridedSliceOpParam", [&](Call& c) {
    c.created(param).value(dim_num).ints("begin", begin, dim_num).ints("end", end, dim_num)
        .ints("stride", stride, dim_num);
  });
}
cnmlStatus_t cnmlDestroyNdStridedSliceOpParam(cnmlNdStridedSliceOpParam_t* param) {
  return destroyLogged("cnmlDestroyNdStridedSliceOpParam", param);
}

cnmlStatus_t cnmlCreateDeconvOpParam_V2(cnmlDeconvOpParam_t* param, int stride_height,
                                        int stride_width, int dilation_height,
                                        int dilation_width, int hu, int hd, int wl, int wr,
                                        int output_pad_height, int output_pad_width) {
  const cnmlStatus_t status =
      createDeconvParam(param, stride_height, stride_width, dilation_height, dilation_width, hu,
                        hd, wl, wr, output_pad_height, output_pad_width);
  return logged(status, "cnmlCreateDeconvOpParam_V2", [&](Call& c) {
    c.created(param).value(stride_height).value(stride_width).value(dilation_height)
        .value(dilation_width).value(hu).value(hd).value(wl).value(wr).value(output_pad_height)
        .value(output_pad_width);
  });
}
cnmlStatus_t cnmlCreateDeconvOpParam(cnmlDeconvOpParam_t* param, int stride_height,
                                     int stride_width, int hu, int hd, int wl, int wr) {
  const cnmlStatus_t status =
      createDeconvParam(param, stride_height, stride_width, 1, 1, hu, hd, wl, wr, 0, 0);
  return logged(status, "cnmlCreateDeconvOpParam", [&](Call& c) {
    c.created(param).value(stride_height).value(stride_width).value(hu).value(hd).value(wl)
        .value(wr);
  });
}
cnmlStatus_t cnmlDestroyDeconvOpParam(cnmlDeconvOpParam_t* param) {
  return destroyLogged("cnmlDestroyDeconvOpParam", param);
}

// ---- NearestNeighbor and Interp (bilinear): output size first (width, then height). ----

cnmlStatus_t cnmlCreateNearestNeighborOpParam(cnmlNearestNeighborOpParam_t* param,
                                              int output_width, int output_height) {
  const cnmlStatus_t status =
      newResizeParam(param, output_width, output_height, CNML_INTERP_ASYMMETRIC);
  return logged(status, "cnmlCreateNearestNeighborOpParam", [&](Call& c) {
    c.created(param).value(output_width).value(output_height);
  });
}
cnmlStatus_t cnmlSetNearestNeighborAlignCorner(cnmlNearestNeighborOpParam_t* param,
                                               bool align_corners) {
  if (!param || !*param) return CNML_STATUS_INVALIDPARAM;
  InterpParams& p = (*param)->p;
  p.coords = align_corners ? CNML_INTERP_ALIGN_CORNERS : CNML_INTERP_ASYMMETRIC;
  p.round = align_corners ? CNML_NEAREST_ROUND_PREFER_CEIL : CNML_NEAREST_FLOOR;
  return logged(CNML_STATUS_SUCCESS, "cnmlSetNearestNeighborAlignCorner", [&](Call& c) {
    c.handleRef(param).value(align_corners);
  });
}
cnmlStatus_t cnmlSetNearestNeighborCoordinateMode(cnmlNearestNeighborOpParam_t* param,
                                                  cnmlInterpCoordinateMode_t mode) {
  return setCoordinateMode("cnmlSetNearestNeighborCoordinateMode", param, mode);
}
cnmlStatus_t cnmlSetNearestNeighborRoundMode(cnmlNearestNeighborOpParam_t* param,
                                             cnmlNearestNeighborRoundMode_t mode) {
  if (!param || !*param || mode < CNML_NEAREST_ROUND_PREFER_FLOOR || mode > CNML_NEAREST_CEIL)
    return CNML_STATUS_INVALIDPARAM;
  (*param)->p.round = mode;
  return logged(CNML_STATUS_SUCCESS, "cnmlSetNearestNeighborRoundMode", [&](Call& c) {
    c.handleRef(param).value(mode);
  });
}
cnmlStatus_t cnmlDestroyNearestNeighborOpParam(cnmlNearestNeighborOpParam_t* param) {
  return destroyLogged("cnmlDestroyNearestNeighborOpParam", param);
}

cnmlStatus_t cnmlCreateInterpOpParam(cnmlInterpOpParam_t* param, int output_width,
                                     int output_height, bool align_corners) {
  const cnmlStatus_t status =
      newResizeParam(param, output_width, output_height,
                     align_corners ? CNML_INTERP_ALIGN_CORNERS : CNML_INTERP_ASYMMETRIC);
  return logged(status, "cnmlCreateInterpOpParam", [&](Call& c) {
    c.created(param).value(output_width).value(output_height).value(align_corners);
  });
}
cnmlStatus_t cnmlSetInterpCoordinateMode(cnmlInterpOpParam_t* param,
                                         cnmlInterpCoordinateMode_t mode) {
  return setCoordinateMode("cnmlSetInterpCoordinateMode", param, mode);
}
cnmlStatus_t cnmlDestroyInterpOpParam(cnmlInterpOpParam_t* param) {
  return destroyLogged("cnmlDestroyInterpOpParam", param);
}

}  // extern "C"
