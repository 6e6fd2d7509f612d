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

#define PZ_BINARY_CALLS(sdk_op)                                  \
  BinaryCalls{cnmlCreate##sdk_op##Op, "cnmlCreate" #sdk_op "Op", \
              cnmlCompute##sdk_op##OpForward_V4, "cnmlCompute" #sdk_op "OpForward_V4"}

BinaryCalls binaryCalls(Binary fn, bool broadcast) {
  switch (fn) {
    case Binary::kAdd:
      return broadcast ? PZ_BINARY_CALLS(BroadcastAdd) : PZ_BINARY_CALLS(Add);
    case Binary::kSub:
      return broadcast ? PZ_BINARY_CALLS(BroadcastSub) : PZ_BINARY_CALLS(Sub);
    case Binary::kMul:
      return broadcast ? PZ_BINARY_CALLS(BroadcastMult) : PZ_BINARY_CALLS(Mult);
    case Binary::kDiv:
      break;
  }
  return PZ_BINARY_CALLS(RealDiv);
}

#undef PZ_BINARY_CALLS

// What the SDK wanted when it refused a binary op (the status alone does not say).
std::string binaryHint(Binary fn, const Tensor& a, const Tensor& b) {
  const std::string shapes = "a " + a.name() + " " + shapeToString(a.shape()) + ", b " + b.name() +
                             " " + shapeToString(b.shape());
  if (fn == Binary::kDiv) {
    return "RealDiv has no broadcast form, so div needs equal shapes; got " + shapes;
  }
  return "b must broadcast to a (b's rank at most a's, dims right-aligned, each equal to a's "
         "or 1); got " +
         shapes;
}

}  // namespace

// ---- BatchNormLayer ---------------------------------------------------------------------

BatchNormLayer::BatchNormLayer(std::string name, Tensor& input)
    : Layer(name, {&input}, input.shape()) {
  const Shape per_channel{channels(name_, input.shape())};
  const ConstTensor& mean = declareWeight("mean", CNML_CONST, per_channel);
  const ConstTensor& var = declareWeight("var", CNML_CONST, per_channel);
  PZ_CHECK(name_,
           cnmlCreateBatchNormOp(&op_, input.desc(), output_.desc(), mean.desc(), var.desc()));
}

cnmlStatus_t BatchNormLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeBatchNormOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                              output_.deviceData(), queue, nullptr));
}

// ---- ScaleLayer -----------------------------------------------------------------------

ScaleLayer::ScaleLayer(std::string name, Tensor& input) : Layer(name, {&input}, input.shape()) {
  const Shape per_channel{channels(name_, input.shape())};
  const ConstTensor& alpha = declareWeight("alpha", CNML_CONST, per_channel);
  const ConstTensor& beta = declareWeight("beta", CNML_CONST, per_channel);
  PZ_CHECK(name_, cnmlCreateScaleOp(&op_, input.desc(), output_.desc(), alpha.desc(), beta.desc()));
}

cnmlStatus_t ScaleLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeScaleOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                          output_.deviceData(), queue, nullptr));
}

// ---- ActiveLayer ----------------------------------------------------------------------

ActiveLayer::ActiveLayer(std::string name, Tensor& input, Active fn)
    : Layer(name, {&input}, input.shape()) {
  PZ_CHECK(name_, cnmlCreateActiveOp(&op_, sdkValue(fn), input.desc(), output_.desc()));
}

cnmlStatus_t ActiveLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeActiveOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                           output_.deviceData(), queue, nullptr));
}

// ---- AddLayer -------------------------------------------------------------------------

AddLayer::AddLayer(std::string name, Tensor& a, Tensor& b) : Layer(name, {&a, &b}, a.shape()) {
  if (a.shape() != b.shape()) {
    throw Error(name_ + ": add needs equal shapes, got " + a.name() + " " +
                shapeToString(a.shape()) + " and " + b.name() + " " + shapeToString(b.shape()));
  }
  PZ_CHECK(name_, cnmlCreateAddOp(&op_, a.desc(), b.desc(), output_.desc()));
}

cnmlStatus_t AddLayer::forward(cnrtQueue_t queue) {
  Tensor& a = *inputs_[0];
  Tensor& b = *inputs_[1];
  return PZ_CHECK_FORWARD(
      name_, cnmlComputeAddOpForward_V4(op_, a.desc(), a.deviceData(), b.desc(), b.deviceData(),
                                        output_.desc(), output_.deviceData(), queue, nullptr));
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
  return detail::checkForward(calls.forward(op_, a.desc(), a.deviceData(), b.desc(), b.deviceData(),
                                            output_.desc(), output_.deviceData(), queue, nullptr),
                              name_, calls.forward_name);
}

// ---- PReluLayer -----------------------------------------------------------------------

PReluLayer::PReluLayer(std::string name, Tensor& input) : Layer(name, {&input}, input.shape()) {
  const ConstTensor& slope =
      declareWeight("slope", CNML_CONST, Shape{channels(name_, input.shape())});
  PZ_CHECK(name_, cnmlCreatePreluOp(&op_, input.desc(), output_.desc(), slope.desc()));
}

cnmlStatus_t PReluLayer::forward(cnrtQueue_t queue) {
  Tensor& in = *inputs_[0];
  return PZ_CHECK_FORWARD(
      name_, cnmlComputePreluOpForward_V4(op_, in.desc(), in.deviceData(), output_.desc(),
                                          output_.deviceData(), queue, nullptr));
}

}  // namespace pz
