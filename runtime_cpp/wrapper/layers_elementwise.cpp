// Per-element and per-channel layers: batch norm, scale, activation, add, binary, prelu.
#include "detail.h"

namespace pz {
namespace {

int channels(const std::string& layer, const Shape& in) {
  if (in.size() < 2) {
    throw Error(layer + ": needs an input with a channel axis (axis 1), got " + shapeToString(in));
  }
  return in[1];
}


void requireData(const std::string& layer, const float* a, const float* b, const char* names) {
  if (a == nullptr || b == nullptr) {
    throw Error(layer + ": configLayer needs both " + names + " (got null)");
  }
}

// The SDK creator and forward of one binary op. Equal shapes use the element-wise ops, a
// broadcast b the Broadcast* ops; RealDiv has no broadcast form, so a div always uses it and
// the SDK refuses unequal shapes with its status.
struct BinaryCalls {
  cnmlStatus_t (*create)(cnmlBaseOp_t*, cnmlTensor_t, cnmlTensor_t, cnmlTensor_t);
  const char* create_name;
  cnmlStatus_t (*forward)(cnmlBaseOp_t, cnmlTensor_t, void*, cnmlTensor_t, void*, cnmlTensor_t,
                          void*, cnrtQueue_t, void*);
  const char* forward_name;
};

#define PZ_BINARY_CALLS(sdk_op)                                                        \
  BinaryCalls{cnmlCreate##sdk_op##Op, "cnmlCreate" #sdk_op "Op",                       \
              cnmlCompute##sdk_op##OpForward_V4, "cnmlCompute" #sdk_op "OpForward_V4"}

BinaryCalls binaryCalls(Binary fn, bool broadcast) {
  switch (fn) {
    case Binary::kAdd: return broadcast ? PZ_BINARY_CALLS(BroadcastAdd) : PZ_BINARY_CALLS(Add);
    case Binary::kSub: return broadcast ? PZ_BINARY_CALLS(BroadcastSub) : PZ_BINARY_CALLS(Sub);
    case Binary::kMul: return broadcast ? PZ_BINARY_CALLS(BroadcastMult) : PZ_BINARY_CALLS(Mult);
    case Binary::kDiv: break;
  }
  return PZ_BINARY_CALLS(RealDiv);
}

#undef PZ_BINARY_CALLS

// What the SDK wanted when it refused a binary op (the status alone does not say).
std::string binaryHint(Binary fn, const Tensor& a, const Tensor& b) {
  const std::string shapes = "a " + a.name() + " " + shapeToString(a.shape()) + ", b " +
                             b.name() + " " + shapeToString(b.shape());
  if (fn == Binary::kDiv) {
    return "RealDiv has no broadcast form, so div needs equal shapes; got " + shapes;
  }
  return "b must broadcast to a (b's rank at most a's, dims right-aligned, each equal to a's "
         "or 1); got " + shapes;
}

}  // namespace

// ---- BatchNormLayer ---------------------------------------------------------------------

BatchNormLayer::BatchNormLayer(std::string name, Tensor& input)
    : Layer(name, {&input}, input.shape()) {
  const Shape per_channel{channels(name_, input.shape())};
  mean_ = std::make_unique<ConstTensor>(name_, CNML_CONST, per_channel);
  var_ = std::make_unique<ConstTensor>(name_, CNML_CONST, per_channel);
  check(cnmlCreateBatchNormOp(&op_, input.desc(), output_.desc(), mean_->desc(), var_->desc()),
        name_, "cnmlCreateBatchNormOp");
}

void BatchNormLayer::configLayer(const float* mean, const float* var) {
  requireData(name_, mean, var, "mean and var");
  mean_->bind(mean);
  var_->bind(var);
  configured_ = true;
}

cnmlStatus_t BatchNormLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return detail::checkForward(
      cnmlComputeBatchNormOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                       output_.deviceData(), queue, nullptr),
      name_, "cnmlComputeBatchNormOpForward_V4");
}

// ---- ScaleLayer -----------------------------------------------------------------------

ScaleLayer::ScaleLayer(std::string name, Tensor& input) : Layer(name, {&input}, input.shape()) {
  const Shape per_channel{channels(name_, input.shape())};
  alpha_ = std::make_unique<ConstTensor>(name_, CNML_CONST, per_channel);
  beta_ = std::make_unique<ConstTensor>(name_, CNML_CONST, per_channel);
  check(cnmlCreateScaleOp(&op_, input.desc(), output_.desc(), alpha_->desc(), beta_->desc()),
        name_, "cnmlCreateScaleOp");
}

void ScaleLayer::configLayer(const float* alpha, const float* beta) {
  requireData(name_, alpha, beta, "alpha and beta");
  alpha_->bind(alpha);
  beta_->bind(beta);
  configured_ = true;
}

cnmlStatus_t ScaleLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return detail::checkForward(cnmlComputeScaleOpForward_V4(op_, in.desc(), in.deviceData(),
                                                           output_.desc(), output_.deviceData(),
                                                           queue, nullptr),
                              name_, "cnmlComputeScaleOpForward_V4");
}

// ---- ActiveLayer ----------------------------------------------------------------------

ActiveLayer::ActiveLayer(std::string name, Tensor& input, Active fn)
    : Layer(name, {&input}, input.shape()) {
  check(cnmlCreateActiveOp(&op_, sdkValue(fn), input.desc(), output_.desc()), name_,
        "cnmlCreateActiveOp");
}

cnmlStatus_t ActiveLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return detail::checkForward(cnmlComputeActiveOpForward_V4(op_, in.desc(), in.deviceData(),
                                                            output_.desc(), output_.deviceData(),
                                                            queue, nullptr),
                              name_, "cnmlComputeActiveOpForward_V4");
}

// ---- AddLayer -------------------------------------------------------------------------

AddLayer::AddLayer(std::string name, Tensor& a, Tensor& b) : Layer(name, {&a, &b}, a.shape()) {
  if (a.shape() != b.shape()) {
    throw Error(name_ + ": add needs equal shapes, got " + a.name() + " " +
                shapeToString(a.shape()) + " and " + b.name() + " " + shapeToString(b.shape()));
  }
  check(cnmlCreateAddOp(&op_, a.desc(), b.desc(), output_.desc()), name_, "cnmlCreateAddOp");
}

cnmlStatus_t AddLayer::forward(cnrtQueue_t queue) {
  Tensor& a = *inputs_[0];
  Tensor& b = *inputs_[1];
  return detail::checkForward(
      cnmlComputeAddOpForward_V4(op_, a.desc(), a.deviceData(), b.desc(), b.deviceData(),
                                 output_.desc(), output_.deviceData(), queue, nullptr),
      name_, "cnmlComputeAddOpForward_V4");
}

// ---- BinaryLayer ----------------------------------------------------------------------

BinaryLayer::BinaryLayer(std::string name, Tensor& a, Tensor& b, Binary fn)
    : Layer(name, {&a, &b}, a.shape()), fn_(fn), broadcast_(a.shape() != b.shape()) {
  const BinaryCalls calls = binaryCalls(fn_, broadcast_);
  const cnmlStatus_t status = calls.create(&op_, a.desc(), b.desc(), output_.desc());
  if (status != CNML_STATUS_SUCCESS) check(status, name_, calls.create_name, binaryHint(fn_, a, b));
}

cnmlStatus_t BinaryLayer::forward(cnrtQueue_t queue) {
  Tensor& a = *inputs_[0];
  Tensor& b = *inputs_[1];
  const BinaryCalls calls = binaryCalls(fn_, broadcast_);
  return detail::checkForward(calls.forward(op_, a.desc(), a.deviceData(), b.desc(),
                                            b.deviceData(), output_.desc(),
                                            output_.deviceData(), queue, nullptr),
                              name_, calls.forward_name);
}

// ---- PReluLayer -----------------------------------------------------------------------

PReluLayer::PReluLayer(std::string name, Tensor& input) : Layer(name, {&input}, input.shape()) {
  slope_ = std::make_unique<ConstTensor>(name_, CNML_CONST,
                                         Shape{channels(name_, input.shape())});
  check(cnmlCreatePreluOp(&op_, input.desc(), output_.desc(), slope_->desc()), name_,
        "cnmlCreatePreluOp");
}

void PReluLayer::configLayer(const float* slope) {
  if (slope == nullptr) throw Error(name_ + ": configLayer needs the slope (got null)");
  slope_->bind(slope);
  configured_ = true;
}

cnmlStatus_t PReluLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return detail::checkForward(cnmlComputePreluOpForward_V4(op_, in.desc(), in.deviceData(),
                                                           output_.desc(), output_.deviceData(),
                                                           queue, nullptr),
                              name_, "cnmlComputePreluOpForward_V4");
}

}  // namespace pz
