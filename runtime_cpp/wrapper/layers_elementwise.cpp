// Per-element layers: activation, add, binary, prelu, unary, clip.
#include <cmath>
#include <limits>

#include "detail.h"

namespace pz {
namespace {

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
    case Binary::kPow:
      return broadcast ? PZ_BINARY_CALLS(BroadcastPow) : PZ_BINARY_CALLS(Pow);
    case Binary::kEqual:
      return broadcast ? PZ_BINARY_CALLS(CycleEqual) : PZ_BINARY_CALLS(Equal);
    case Binary::kNotEqual:
      return broadcast ? PZ_BINARY_CALLS(CycleNEqual) : PZ_BINARY_CALLS(NEqual);
    case Binary::kLess:
      return broadcast ? PZ_BINARY_CALLS(CycleLess) : PZ_BINARY_CALLS(Less);
    case Binary::kLessEqual:
      return broadcast ? PZ_BINARY_CALLS(CycleLessEqual) : PZ_BINARY_CALLS(LessEqual);
    case Binary::kGreater:
      return broadcast ? PZ_BINARY_CALLS(CycleGreater) : PZ_BINARY_CALLS(Greater);
    case Binary::kGreaterEqual:
      return broadcast ? PZ_BINARY_CALLS(CycleGreaterEqual) : PZ_BINARY_CALLS(GreaterEqual);
    case Binary::kAnd:
      return broadcast ? PZ_BINARY_CALLS(CycleAnd) : PZ_BINARY_CALLS(And);
    case Binary::kOr:
      return broadcast ? PZ_BINARY_CALLS(CycleOr) : PZ_BINARY_CALLS(Or);
    case Binary::kXor:
      return broadcast ? PZ_BINARY_CALLS(CycleXor) : PZ_BINARY_CALLS(Xor);
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

// ---- ActiveLayer ----------------------------------------------------------------------

ActiveLayer::ActiveLayer(std::string name, Tensor& input, Active fn)
    : Layer(name, {&input}, input.shape()) {
  defineOp([this, fn] {
    PZ_CHECK(name_, cnmlCreateActiveOp(&op_, sdkValue(fn), in(0), output_.desc()));
  });
  PZ_FORWARD(cnmlComputeActiveOpForward_V4);
}

// ---- AddLayer -------------------------------------------------------------------------

AddLayer::AddLayer(std::string name, Tensor& a, Tensor& b) : Layer(name, {&a, &b}, a.shape()) {
  if (a.shape() != b.shape()) {
    throw Error(name_ + ": add needs equal shapes, got " + a.name() + " " +
                shapeToString(a.shape()) + " and " + b.name() + " " + shapeToString(b.shape()));
  }
  defineOp([this] { PZ_CHECK(name_, cnmlCreateAddOp(&op_, in(0), in(1), output_.desc())); });
  PZ_FORWARD(cnmlComputeAddOpForward_V4);
}

// ---- BinaryLayer ----------------------------------------------------------------------

BinaryLayer::BinaryLayer(std::string name, Tensor& a, Tensor& b, Binary fn)
    : Layer(name, {&a, &b}, a.shape()) {
  // b's shape differs from a's: the SDK's Broadcast* op.
  const BinaryCalls calls = binaryCalls(fn, a.shape() != b.shape());
  defineOp([this, calls, fn] {
    const cnmlStatus_t status = calls.create(&op_, in(0), in(1), output_.desc());
    if (status != CNML_STATUS_SUCCESS) {
      check(status, name_, calls.create_name, binaryHint(fn, *inputs_[0], *inputs_[1]));
    }
  });
  setForward(calls.forward, calls.forward_name);
}

// ---- PReluLayer -----------------------------------------------------------------------

PReluLayer::PReluLayer(std::string name, Tensor& input) : Layer(name, {&input}, input.shape()) {
  const ConstTensor& slope =
      declareWeight("slope", CNML_CONST, Shape{detail::channels(name_, input.shape())});
  defineOp([this, &slope] {
    PZ_CHECK(name_, cnmlCreatePreluOp(&op_, in(0), output_.desc(), slope.desc()));
  });
  PZ_FORWARD(cnmlComputePreluOpForward_V4);
}

// ---- UnaryLayer -----------------------------------------------------------------------

UnaryLayer::UnaryLayer(std::string name, Tensor& input, Unary fn, float power)
    : Layer(name, {&input}, input.shape()) {
  if (fn == Unary::kPow && !std::isfinite(power)) {
    throw Error(name_ + ": pow needs a finite exponent, got " + std::to_string(power));
  }
  defineOp([this, fn, power] {
    switch (fn) {
      case Unary::kSqrt: PZ_CHECK(name_, cnmlCreateSqrtOp(&op_, in(0), output_.desc())); break;
      case Unary::kRsqrt: PZ_CHECK(name_, cnmlCreateRsqrtOp(&op_, in(0), output_.desc())); break;
      case Unary::kPow:
        PZ_CHECK(name_, cnmlCreatePowerOp(&op_, in(0), output_.desc(), power));
        break;
      case Unary::kErf: PZ_CHECK(name_, cnmlCreateErfOp(&op_, in(0), output_.desc())); break;
      case Unary::kGelu:
      case Unary::kGeluTanh:
        PZ_CHECK(name_,
                 cnmlCreateGeluOp(&op_, in(0), output_.desc(), fn == Unary::kGeluTanh));
        break;
      case Unary::kExp: PZ_CHECK(name_, cnmlCreateExpOp(&op_, in(0), output_.desc())); break;
      case Unary::kLog: PZ_CHECK(name_, cnmlCreateLogOp(&op_, in(0), output_.desc())); break;
      case Unary::kAbs: PZ_CHECK(name_, cnmlCreateAbsOp(&op_, in(0), output_.desc())); break;
      case Unary::kNeg: PZ_CHECK(name_, cnmlCreateNegOp(&op_, in(0), output_.desc())); break;
      case Unary::kNot: PZ_CHECK(name_, cnmlCreateNotOp(&op_, in(0), output_.desc())); break;
      case Unary::kSin: PZ_CHECK(name_, cnmlCreateSinOp(&op_, in(0), output_.desc())); break;
      case Unary::kCos: PZ_CHECK(name_, cnmlCreateCosOp(&op_, in(0), output_.desc())); break;
    }
  });
  switch (fn) {
    case Unary::kSqrt: PZ_FORWARD(cnmlComputeSqrtOpForward_V4); break;
    case Unary::kRsqrt: PZ_FORWARD(cnmlComputeRsqrtOpForward_V4); break;
    case Unary::kPow: PZ_FORWARD(cnmlComputePowerOpForward_V4); break;
    case Unary::kErf: PZ_FORWARD(cnmlComputeErfOpForward_V4); break;
    case Unary::kGelu:
    case Unary::kGeluTanh: PZ_FORWARD(cnmlComputeGeluOpForward_V4); break;
    case Unary::kExp: PZ_FORWARD(cnmlComputeExpOpForward_V4); break;
    case Unary::kLog: PZ_FORWARD(cnmlComputeLogOpForward_V4); break;
    case Unary::kAbs: PZ_FORWARD(cnmlComputeAbsOpForward_V4); break;
    case Unary::kNeg: PZ_FORWARD(cnmlComputeNegOpForward_V4); break;
    case Unary::kNot: PZ_FORWARD(cnmlComputeNotOpForward_V4); break;
    case Unary::kSin: PZ_FORWARD(cnmlComputeSinOpForward_V4); break;
    case Unary::kCos: PZ_FORWARD(cnmlComputeCosOpForward_V4); break;
  }
}

// ---- ClipLayer ------------------------------------------------------------------------

ClipLayer::ClipLayer(std::string name, Tensor& input, float lower, float upper)
    : Layer(name, {&input}, input.shape()) {
  if (std::isnan(lower) || std::isnan(upper)) {
    throw Error(name_ + ": clip bounds must be numbers (infinities allowed), got " +
                std::to_string(lower) + " and " + std::to_string(upper));
  }
  defineOp([this, lower, upper] {
    PZ_CHECK(name_, cnmlCreateClipOp(&op_, in(0), output_.desc(), lower, upper));
  });
  PZ_FORWARD(cnmlComputeClipOpForward_V4);
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace {

Active activeNamed(const std::string& layer, const std::string& function) {
  return parseEnum<Active>(function, layer);
}

Unary unaryNamed(const std::string& layer, const std::string& function) {
  return parseEnum<Unary>(function, layer);
}

Binary binaryNamed(const std::string& layer, const std::string& op) {
  return parseEnum<Binary>(op, layer);
}

}  // namespace

namespace detail {

void addElementwiseFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"active", 1, {"function"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<ActiveLayer>(
                             name, *in[0], activeNamed(name, a.text("function")));
                       }});
  factories.push_back({"add", 2, {},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs&) -> std::unique_ptr<Layer> {
                         return std::make_unique<AddLayer>(name, *in[0], *in[1]);
                       }});
  factories.push_back({"binary", 2, {"op"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<BinaryLayer>(name, *in[0], *in[1],
                                                              binaryNamed(name, a.text("op")));
                       }});
  factories.push_back({"unary", 1, {"function", "power"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<UnaryLayer>(
                             name, *in[0], unaryNamed(name, a.text("function")),
                             static_cast<float>(a.real("power", 1.0)));
                       }});
  factories.push_back({"clip", 1, {"lower", "upper"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const double inf = std::numeric_limits<double>::infinity();
                         return std::make_unique<ClipLayer>(
                             name, *in[0], static_cast<float>(a.real("lower", -inf)),
                             static_cast<float>(a.real("upper", inf)));
                       }});
  factories.push_back({"prelu", 1, {},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs&) -> std::unique_ptr<Layer> {
                         return std::make_unique<PReluLayer>(name, *in[0]);
                       }});
}

}  // namespace detail

}  // namespace pz
