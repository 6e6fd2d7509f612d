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
  filter_ = std::make_unique<ConstTensor>(name_, CNML_FILTER, filter);
  bias_ = std::make_unique<ConstTensor>(name_, CNML_CONST, Shape{params.out_channels});
  check(cnmlCreateConvOpParam_V2(param_.out(), params.stride_.h, params.stride_.w, params.dilation_.h,
                                 params.dilation_.w, params.pads_.top, params.pads_.bottom,
                                 params.pads_.left, params.pads_.right),
        name_, "cnmlCreateConvOpParam_V2");
  const cnmlStatus_t status =
      params.groups_ > 1
          ? cnmlCreateConvGroupOp(&op_, param_, input.desc(), output_.desc(), filter_->desc(),
                                  bias_->desc(), params.groups_)
          : cnmlCreateConvOp(&op_, param_, input.desc(), output_.desc(), filter_->desc(),
                             bias_->desc());
  check(status, name_, params.groups_ > 1 ? "cnmlCreateConvGroupOp" : "cnmlCreateConvOp");
}

ConvLayer::~ConvLayer() = default;

void ConvLayer::configLayer(const float* weight, const float* bias) {
  detail::bindFilterAndBias(name_, *filter_, *bias_, weight, bias);
  configured_ = true;
}

cnmlStatus_t ConvLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  if (params_.groups_ > 1) {
    return detail::checkForward(
        cnmlComputeConvGroupOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                         output_.deviceData(), queue, nullptr),
        name_, "cnmlComputeConvGroupOpForward_V4");
  }
  return detail::checkForward(cnmlComputeConvOpForward_V4(op_, in.desc(), in.deviceData(),
                                                          output_.desc(), output_.deviceData(),
                                                          queue, nullptr),
                              name_, "cnmlComputeConvOpForward_V4");
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
  filter_ = std::make_unique<ConstTensor>(name_, CNML_FILTER, filter);
  bias_ = std::make_unique<ConstTensor>(name_, CNML_CONST, Shape{params.out_channels});
  const Pads& pad = params.pads_;
  if (deconvNeedsV2(params)) {
    check(cnmlCreateDeconvOpParam_V2(param_.out(), params.stride_.h, params.stride_.w,
                                     params.dilation_.h, params.dilation_.w, pad.top, pad.bottom,
                                     pad.left, pad.right, params.output_padding_.h,
                                     params.output_padding_.w),
          name_, "cnmlCreateDeconvOpParam_V2");
  } else {
    check(cnmlCreateDeconvOpParam(param_.out(), params.stride_.h, params.stride_.w, pad.top,
                                  pad.bottom - params.output_padding_.h, pad.left,
                                  pad.right - params.output_padding_.w),
          name_, "cnmlCreateDeconvOpParam");
  }
  const cnmlStatus_t status =
      params.groups_ > 1
          ? cnmlCreateDeconvGroupOp(&op_, param_, input.desc(), output_.desc(), filter_->desc(),
                                    bias_->desc(), params.groups_)
          : cnmlCreateDeconvOp(&op_, param_, input.desc(), output_.desc(), filter_->desc(),
                               bias_->desc());
  check(status, name_, params.groups_ > 1 ? "cnmlCreateDeconvGroupOp" : "cnmlCreateDeconvOp");
}

DeconvLayer::~DeconvLayer() = default;

void DeconvLayer::configLayer(const float* weight, const float* bias) {
  detail::bindFilterAndBias(name_, *filter_, *bias_, weight, bias);
  configured_ = true;
}

cnmlStatus_t DeconvLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  if (params_.groups_ > 1) {
    return detail::checkForward(
        cnmlComputeDeconvGroupOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                           output_.deviceData(), queue, nullptr),
        name_, "cnmlComputeDeconvGroupOpForward_V4");
  }
  return detail::checkForward(cnmlComputeDeconvOpForward_V4(op_, in.desc(), in.deviceData(),
                                                            output_.desc(),
                                                            output_.deviceData(), queue, nullptr),
                              name_, "cnmlComputeDeconvOpForward_V4");
}

// ---- InterpLayer --------------------------------------------------------------------

InterpLayer::InterpLayer(std::string name, Tensor& input, const Interp& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return interpOutputShape(input.shape(), params); })),
      params_(params) {
  const InterpCoordinates c = params.coordinates_;
  cnmlStatus_t status;
  const char* call;
  if (!params.linear_) {
    check(cnmlCreateNearestNeighborOpParam(nearest_param_.out(), params.size.w, params.size.h), name_,
          "cnmlCreateNearestNeighborOpParam");
    // CNML's default is asymmetric with floor; align_corners rounds half up (TensorFlow's).
    if (c == InterpCoordinates::kAlignCorners &&
        params.rounding_ == InterpRounding::kRoundPreferCeil) {
      check(cnmlSetNearestNeighborAlignCorner(nearest_param_.address(), true), name_,
            "cnmlSetNearestNeighborAlignCorner");
    } else if (c != InterpCoordinates::kAsymmetric ||
               params.rounding_ != InterpRounding::kFloor) {
      check(cnmlSetNearestNeighborCoordinateMode(nearest_param_.address(), sdkValue(c)), name_,
            "cnmlSetNearestNeighborCoordinateMode");
      check(cnmlSetNearestNeighborRoundMode(nearest_param_.address(), sdkValue(params.rounding_)), name_,
            "cnmlSetNearestNeighborRoundMode");
    }
    status = cnmlCreateNearestNeighborOp(&op_, input.desc(), output_.desc(), nearest_param_);
    call = "cnmlCreateNearestNeighborOp";
  } else {
    check(cnmlCreateInterpOpParam(linear_param_.out(), params.size.w, params.size.h,
                                  c == InterpCoordinates::kAlignCorners),
          name_, "cnmlCreateInterpOpParam");
    if (c != InterpCoordinates::kAlignCorners && c != InterpCoordinates::kAsymmetric) {
      check(cnmlSetInterpCoordinateMode(linear_param_.address(), sdkValue(c)), name_,
            "cnmlSetInterpCoordinateMode");
    }
    status = cnmlCreateInterpOp(&op_, input.desc(), output_.desc(), linear_param_);
    call = "cnmlCreateInterpOp";
  }
  check(status, name_, call);
}

InterpLayer::~InterpLayer() = default;

cnmlStatus_t InterpLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  if (!params_.linear_) {
    return detail::checkForward(
        cnmlComputeNearestNeighborOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                               output_.deviceData(), queue, nullptr),
        name_, "cnmlComputeNearestNeighborOpForward_V4");
  }
  return detail::checkForward(cnmlComputeInterpOpForward_V4(op_, in.desc(), in.deviceData(),
                                                            output_.desc(),
                                                            output_.deviceData(), queue, nullptr),
                              name_, "cnmlComputeInterpOpForward_V4");
}

// ---- pooling --------------------------------------------------------------------------

namespace {

using PoolParam = SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam>;

void createPoolOp(const std::string& name, PoolParam& param, cnmlBaseOp_t* op, const Pool& p,
                  Tensor& input, Tensor& output) {
  check(cnmlCreatePoolOpParam_V3(param.out(), p.kernel.h, p.kernel.w, p.stride_.h, p.stride_.w,
                                 p.pads_.top, p.pads_.bottom, p.pads_.left, p.pads_.right, 1, 1,
                                 p.mode, p.ceil_mode_ ? CNML_POOL_KFULL : CNML_POOL_KVALID,
                                 !p.count_include_pad_, 0.0f),
        name, "cnmlCreatePoolOpParam_V3");
  check(cnmlCreatePoolOp(op, param, input.desc(), output.desc()), name, "cnmlCreatePoolOp");
}

Pool globalPool(const Shape& in) {
  if (in.size() != 4) {
    throw Error("global average pooling needs a 4-D NCHW input, got " + shapeToString(in));
  }
  return Pool::avg({in[2], in[3]});
}

cnmlStatus_t poolForward(cnmlBaseOp_t op, Tensor& in, Tensor& out, cnrtQueue_t queue,
                         const std::string& name) {
  return detail::checkForward(cnmlComputePoolOpForward_V4(op, in.desc(), in.deviceData(),
                                                          out.desc(), out.deviceData(), queue,
                                                          nullptr),
                              name, "cnmlComputePoolOpForward_V4");
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
  check(cnmlCreateLrnOpParam(param_.out(), CNML_LRN_V3, params.size, params.alpha, params.beta,
                             params.bias),
        name_, "cnmlCreateLrnOpParam");
  check(cnmlCreateLrnOp(&op_, param_, input.desc(), output_.desc()), name_, "cnmlCreateLrnOp");
}

LrnLayer::~LrnLayer() = default;

cnmlStatus_t LrnLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return detail::checkForward(cnmlComputeLrnOpForward_V4(op_, in.desc(), in.deviceData(),
                                                         output_.desc(), output_.deviceData(),
                                                         queue, nullptr),
                              name_, "cnmlComputeLrnOpForward_V4");
}

}  // namespace pz
