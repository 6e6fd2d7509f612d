// Spatial layers: convolution (plain and grouped), deconvolution, resize (nearest and
// bilinear), pooling, global average pooling, LRN.
#include "detail.h"

namespace pz {

// ---- ConvLayer ----------------------------------------------------------------------

ConvLayer::ConvLayer(std::string name, Tensor& input, const Conv& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return convOutputShape(input.shape(), params); })),
      params_(params) {
  const Shape filter{params.out_channels, input.shape()[1] / params.groups_, params.kernel.h,
                     params.kernel.w};
  const ConstTensor& weight = declareWeight("weight", CNML_FILTER, filter);
  const ConstTensor& bias =
      declareWeight("bias", CNML_CONST, Shape{params.out_channels}, /*optional=*/true);
  PZ_CHECK(name_,
           cnmlCreateConvOpParam_V2(param_.out(), params.stride_.h, params.stride_.w,
                                    params.dilation_.h, params.dilation_.w, params.pads_.top,
                                    params.pads_.bottom, params.pads_.left, params.pads_.right));
  if (params.groups_ > 1) {
    PZ_CHECK(name_, cnmlCreateConvGroupOp(&op_, param_, input.desc(), output_.desc(), weight.desc(),
                                          bias.desc(), params.groups_));
  } else {
    PZ_CHECK(name_, cnmlCreateConvOp(&op_, param_, input.desc(), output_.desc(), weight.desc(),
                                     bias.desc()));
  }
}

ConvLayer::~ConvLayer() = default;

cnmlStatus_t ConvLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  if (params_.groups_ > 1) {
    return PZ_CHECK_FORWARD(
        name_, cnmlComputeConvGroupOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                                output_.deviceData(), queue, nullptr));
  }
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeConvOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                         output_.deviceData(), queue, nullptr));
}

// ---- DeconvLayer --------------------------------------------------------------------

namespace {

// CNML's param crops the full output; ONNX's output padding below the bottom pad is a
// smaller bottom crop. Dilation, or output padding past the pad, needs the mock's _V2.
bool deconvNeedsV2(const Deconv& p) {
  return p.dilation_.h != 1 || p.dilation_.w != 1 || p.output_padding_.h > p.pads_.bottom ||
         p.output_padding_.w > p.pads_.right;
}

}  // namespace

DeconvLayer::DeconvLayer(std::string name, Tensor& input, const Deconv& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return deconvOutputShape(input.shape(), params); })),
      params_(params) {
  const Shape filter{input.shape()[1], params.out_channels / params.groups_, params.kernel.h,
                     params.kernel.w};
  const ConstTensor& weight = declareWeight("weight", CNML_FILTER, filter);
  const ConstTensor& bias =
      declareWeight("bias", CNML_CONST, Shape{params.out_channels}, /*optional=*/true);
  const Pads& pad = params.pads_;
  if (deconvNeedsV2(params)) {
    PZ_CHECK(name_, cnmlCreateDeconvOpParam_V2(param_.out(), params.stride_.h, params.stride_.w,
                                               params.dilation_.h, params.dilation_.w, pad.top,
                                               pad.bottom, pad.left, pad.right,
                                               params.output_padding_.h, params.output_padding_.w));
  } else {
    PZ_CHECK(name_, cnmlCreateDeconvOpParam(param_.out(), params.stride_.h, params.stride_.w,
                                            pad.top, pad.bottom - params.output_padding_.h,
                                            pad.left, pad.right - params.output_padding_.w));
  }
  if (params.groups_ > 1) {
    PZ_CHECK(name_, cnmlCreateDeconvGroupOp(&op_, param_, input.desc(), output_.desc(),
                                            weight.desc(), bias.desc(), params.groups_));
  } else {
    PZ_CHECK(name_, cnmlCreateDeconvOp(&op_, param_, input.desc(), output_.desc(), weight.desc(),
                                       bias.desc()));
  }
}

DeconvLayer::~DeconvLayer() = default;

cnmlStatus_t DeconvLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  if (params_.groups_ > 1) {
    return PZ_CHECK_FORWARD(
        name_, cnmlComputeDeconvGroupOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                                  output_.deviceData(), queue, nullptr));
  }
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeDeconvOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                           output_.deviceData(), queue, nullptr));
}

// ---- InterpLayer --------------------------------------------------------------------

InterpLayer::InterpLayer(std::string name, Tensor& input, const Interp& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return interpOutputShape(input.shape(), params); })),
      params_(params) {
  const InterpCoordinates c = params.coordinates_;
  if (!params.linear_) {
    PZ_CHECK(name_,
             cnmlCreateNearestNeighborOpParam(nearest_param_.out(), params.size.w, params.size.h));
    // CNML's default is asymmetric with floor; align_corners rounds half up (TensorFlow's).
    if (c == InterpCoordinates::kAlignCorners &&
        params.rounding_ == InterpRounding::kRoundPreferCeil) {
      PZ_CHECK(name_, cnmlSetNearestNeighborAlignCorner(nearest_param_.address(), true));
    } else if (c != InterpCoordinates::kAsymmetric || params.rounding_ != InterpRounding::kFloor) {
      PZ_CHECK(name_, cnmlSetNearestNeighborCoordinateMode(nearest_param_.address(), sdkValue(c)));
      PZ_CHECK(name_, cnmlSetNearestNeighborRoundMode(nearest_param_.address(),
                                                      sdkValue(params.rounding_)));
    }
    PZ_CHECK(name_,
             cnmlCreateNearestNeighborOp(&op_, input.desc(), output_.desc(), nearest_param_));
  } else {
    PZ_CHECK(name_, cnmlCreateInterpOpParam(linear_param_.out(), params.size.w, params.size.h,
                                            c == InterpCoordinates::kAlignCorners));
    if (c != InterpCoordinates::kAlignCorners && c != InterpCoordinates::kAsymmetric) {
      PZ_CHECK(name_, cnmlSetInterpCoordinateMode(linear_param_.address(), sdkValue(c)));
    }
    PZ_CHECK(name_, cnmlCreateInterpOp(&op_, input.desc(), output_.desc(), linear_param_));
  }
}

InterpLayer::~InterpLayer() = default;

cnmlStatus_t InterpLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  if (!params_.linear_) {
    return PZ_CHECK_FORWARD(name_, cnmlComputeNearestNeighborOpForward_V4(
                                       op_, in.desc(), in.deviceData(), output_.desc(),
                                       output_.deviceData(), queue, nullptr));
  }
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeInterpOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                           output_.deviceData(), queue, nullptr));
}

// ---- pooling --------------------------------------------------------------------------

namespace {

using PoolParam = SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam>;

void createPoolOp(const std::string& name, PoolParam& param, cnmlBaseOp_t* op, const Pool& p,
                  Tensor& input, Tensor& output) {
  PZ_CHECK(name,
           cnmlCreatePoolOpParam_V3(param.out(), p.kernel.h, p.kernel.w, p.stride_.h, p.stride_.w,
                                    p.pads_.top, p.pads_.bottom, p.pads_.left, p.pads_.right, 1, 1,
                                    p.mode, p.ceil_mode_ ? CNML_POOL_KFULL : CNML_POOL_KVALID,
                                    !p.count_include_pad_, 0.0f));
  PZ_CHECK(name, cnmlCreatePoolOp(op, param, input.desc(), output.desc()));
}

Pool globalPool(const Shape& in) {
  if (in.size() != 4) {
    throw Error("global average pooling needs a 4-D NCHW input, got " + shapeToString(in));
  }
  return Pool::avg({in[2], in[3]});
}

cnmlStatus_t poolForward(cnmlBaseOp_t op, Tensor& in, Tensor& out, cnrtQueue_t queue,
                         const std::string& name) {
  return PZ_CHECK_FORWARD(name,
                          cnmlComputePoolOpForward_V4(op, in.desc(), in.deviceData(), out.desc(),
                                                      out.deviceData(), queue, nullptr));
}

}  // namespace

PoolLayer::PoolLayer(std::string name, Tensor& input, const Pool& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return poolOutputShape(input.shape(), params); })) {
  createPoolOp(name_, param_, &op_, params, input, output_);
}

PoolLayer::~PoolLayer() = default;

cnmlStatus_t PoolLayer::forward(cnrtQueue_t queue) {
  return poolForward(op_, *inputs_[0], output_, queue, name_);
}

GlobalAvgPoolLayer::GlobalAvgPoolLayer(std::string name, Tensor& input)
    : Layer(name, {&input}, detail::layerShape(name, [&] {
              return poolOutputShape(input.shape(), globalPool(input.shape()));
            })) {
  createPoolOp(name_, param_, &op_, globalPool(input.shape()), input, output_);
}

GlobalAvgPoolLayer::~GlobalAvgPoolLayer() = default;

cnmlStatus_t GlobalAvgPoolLayer::forward(cnrtQueue_t queue) {
  return poolForward(op_, *inputs_[0], output_, queue, name_);
}

// ---- LrnLayer -------------------------------------------------------------------------

LrnLayer::LrnLayer(std::string name, Tensor& input, const Lrn& params)
    : Layer(name, {&input}, input.shape()) {
  PZ_CHECK(name_, cnmlCreateLrnOpParam(param_.out(), CNML_LRN_V3, params.size, params.alpha,
                                       params.beta, params.bias));
  PZ_CHECK(name_, cnmlCreateLrnOp(&op_, param_, input.desc(), output_.desc()));
}

LrnLayer::~LrnLayer() = default;

cnmlStatus_t LrnLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeLrnOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                        output_.deviceData(), queue, nullptr));
}

}  // namespace pz
