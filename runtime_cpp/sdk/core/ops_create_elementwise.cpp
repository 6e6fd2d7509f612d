// Base op creation (ops_create.cpp): the element-wise ops and the normalisations, whose
// output has their input's shape (the reductions: with the reduced axes kept or dropped).
#include <cmath>
#include <initializer_list>

#include "call_log.h"
#include "ops_create.h"
#include "op_families.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), Call
using namespace pz_sdk::create;

namespace {

// A per-channel const (axis 1 of the input) of BatchNorm, Scale or Prelu: a weight of C
// elements, or where the op allows it of 1 (shared by all channels), or none at all.
enum Accepts { kPerChannel, kOrScalar, kOrScalarOrNone };
struct ChannelConst {
  cnmlTensor_t tensor;
  Accepts accepts;

  bool fits(int channels) const {
    if (!tensor) return accepts == kOrScalarOrNone;
    if (!isWeight(tensor)) return false;
    const std::size_t n = elementCount(dimsOf(tensor));
    return n == static_cast<std::size_t>(channels) || (accepts != kPerChannel && n == 1);
  }
};

// Same shape in and out, and per-channel consts in the order the kernels read them; the
// entry point `fn` takes (op, input, output, consts...) and is recorded so.
cnmlStatus_t createChannelwise(const char* fn, cnmlBaseOp_t* op, OpKind kind, cnmlTensor_t input,
                               cnmlTensor_t output, std::initializer_list<ChannelConst> consts) {
  const auto create = [&]() -> cnmlStatus_t {
    OpDesc d;
    d.kind = kind;
    cnmlStatus_t s = createSameShape(op, input, output, d);
    if (s != CNML_STATUS_SUCCESS) return s;
    const Dims& in = dimsOf(input);
    if (in.size() < 2) return kBad;
    for (const ChannelConst& c : consts) {
      if (!c.fits(in[1])) return kBad;
      d.consts.push_back(c.tensor ? c.tensor->impl : nullptr);
    }
    return finish(op, std::move(d));
  };
  return logged(create(), fn, [&](Call& c) {
    c.created(op).handle(input).handle(output);
    for (const ChannelConst& k : consts) c.handle(k.tensor);
  });
}

// Mock rule for the Broadcast* creators (numpy rules in one direction): b has at most a's
// rank, dims right-aligned, each b dim equal to a's or 1.
bool broadcastsTo(const Dims& b, const Dims& a) {
  if (b.size() > a.size()) return false;
  const std::size_t lead = a.size() - b.size();
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i] != 1 && b[i] != a[lead + i]) return false;
  return true;
}

// The two-input element-wise family other than Add (which keeps its own kind): plain
// creators need equal shapes, Broadcast* creators a b that broadcasts to a.
cnmlStatus_t createBinary(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                          cnmlTensor_t output, BinaryOp which, bool broadcast) {
  if (!op || !isActivation(input_1) || !isActivation(input_2) || !isActivation(output))
    return kBad;
  const Dims &a = dimsOf(input_1), &b = dimsOf(input_2);
  if (dimsOf(output) != a) return kBad;
  if (broadcast ? !broadcastsTo(b, a) : b != a) return kBad;
  OpDesc d;
  d.kind = OpKind::kBinary;
  d.binary = which;
  d.broadcast = broadcast;
  d.inputs = {operand(input_1), operand(input_2)};
  d.outputs = {operand(output)};
  return finish(op, std::move(d));
}

// Softmax and LogSoftmax: same shape in and out, along one axis of the input.
cnmlStatus_t createAlongAxis(cnmlBaseOp_t* op, OpKind kind, int axis, cnmlTensor_t input,
                             cnmlTensor_t output) {
  OpDesc d;
  d.kind = kind;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  if (s != CNML_STATUS_SUCCESS) return s;
  if (axis < 0 || static_cast<std::size_t>(axis) >= dimsOf(input).size()) return kBad;
  d.axis = axis;
  return finish(op, std::move(d));
}

// Unary element-wise ops (Sqrt, Rsqrt, Power, Erf, Gelu): same shape in and out.
cnmlStatus_t createUnary(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output, UnaryFn fn,
                         float power) {
  OpDesc d;
  d.kind = OpKind::kUnary;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  if (s != CNML_STATUS_SUCCESS) return s;
  if (!std::isfinite(power)) return kBad;
  d.unary = fn;
  d.power = power;
  return finish(op, std::move(d));
}

// Reductions over a set of axes: distinct, ascending, in range; the output keeps the reduced
// axes as 1s or drops them (the same element order either way).
cnmlStatus_t createReduce(cnmlBaseOp_t* op, const int axes[], int axis_num, cnmlTensor_t input,
                          cnmlTensor_t output, ReduceFn fn) {
  if (!op || !axes || axis_num < 1 || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims& in = dimsOf(input);
  Dims kept, dropped;
  for (int i = 0; i < axis_num; ++i) {
    if (axes[i] < 0 || static_cast<std::size_t>(axes[i]) >= in.size()) return kBad;
    if (i > 0 && axes[i] <= axes[i - 1]) return kBad;
  }
  for (std::size_t a = 0, i = 0; a < in.size(); ++a) {
    const bool reduced = i < static_cast<std::size_t>(axis_num) &&
                         axes[i] == static_cast<int>(a);
    if (reduced) ++i;
    kept.push_back(reduced ? 1 : in[a]);
    if (!reduced) dropped.push_back(in[a]);
  }
  const Dims& out = dimsOf(output);
  if (out != kept && out != dropped) return kBad;
  OpDesc d = oneToOne(OpKind::kReduce, input, output);
  d.reduce = fn;
  d.axes.assign(axes, axes + axis_num);
  return finish(op, std::move(d));
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlCreateActiveOp(cnmlBaseOp_t* op, cnmlActiveFunction_t fn, cnmlTensor_t input,
                                cnmlTensor_t output) {
  if (fn < CNML_ACTIVE_NONE || fn > CNML_ACTIVE_HARD_SIGMOID) return kBad;
  OpDesc d;
  d.kind = OpKind::kActive;
  d.active = fn;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  return logged(s != CNML_STATUS_SUCCESS ? s : finish(op, std::move(d)),
                "cnmlCreateActiveOp", [&](Call& c) {
    c.created(op).value(fn).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlCreateBatchNormOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                                   cnmlTensor_t mean, cnmlTensor_t var) {
  return createChannelwise("cnmlCreateBatchNormOp", op, OpKind::kBatchNorm, input, output,
                           {{mean, kPerChannel}, {var, kPerChannel}});
}

cnmlStatus_t cnmlCreateScaleOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               cnmlTensor_t alpha, cnmlTensor_t beta) {
  return createChannelwise("cnmlCreateScaleOp", op, OpKind::kScale, input, output,
                           {{alpha, kOrScalar}, {beta, kOrScalarOrNone}});
}

cnmlStatus_t cnmlCreatePreluOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               cnmlTensor_t prelu_param) {
  return createChannelwise("cnmlCreatePreluOp", op, OpKind::kPrelu, input, output,
                           {{prelu_param, kOrScalar}});
}

cnmlStatus_t cnmlCreateAddOp(cnmlBaseOp_t* op, cnmlTensor_t input_1, cnmlTensor_t input_2,
                             cnmlTensor_t output) {
  if (!op || !isActivation(input_1) || !isActivation(input_2) || !isActivation(output))
    return kBad;
  if (dimsOf(input_1) != dimsOf(input_2) || dimsOf(input_1) != dimsOf(output)) return kBad;
  OpDesc d;
  d.kind = OpKind::kAdd;
  d.inputs = {operand(input_1), operand(input_2)};
  d.outputs = {operand(output)};
  return logged(finish(op, std::move(d)), "cnmlCreateAddOp", [&](Call& c) {
    c.created(op).handle(input_1).handle(input_2).handle(output);
  });
}

// The two-input element-wise family but Add, each form (element-wise or broadcast) its own.
#define PZ_BINARY_CREATE(sdk_op, which, broadcast)                                          \
  cnmlStatus_t cnmlCreate##sdk_op##Op(cnmlBaseOp_t* op, cnmlTensor_t input_1,                \
                                      cnmlTensor_t input_2, cnmlTensor_t output) {           \
    return logged(createBinary(op, input_1, input_2, output, which, broadcast),              \
                  "cnmlCreate" #sdk_op "Op", [&](Call& c) {                                  \
                    c.created(op).handle(input_1).handle(input_2).handle(output);            \
                  });                                                                        \
  }
PZ_SDK_BINARY_OPS(PZ_BINARY_CREATE)
#undef PZ_BINARY_CREATE

cnmlStatus_t cnmlCreatePowerOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               float power) {
  return logged(createUnary(op, input, output, UnaryFn::kPower, power), "cnmlCreatePowerOp",
                [&](Call& c) { c.created(op).handle(input).handle(output).value(power); });
}

cnmlStatus_t cnmlCreateGeluOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                              bool approximate) {
  return logged(createUnary(op, input, output,
                            approximate ? UnaryFn::kGeluTanh : UnaryFn::kGelu, 1.0f),
                "cnmlCreateGeluOp",
                [&](Call& c) { c.created(op).handle(input).handle(output).value(approximate); });
}

cnmlStatus_t cnmlCreateClipOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                              double lower_bound, double upper_bound) {
  const cnmlStatus_t status = [&] {
    if (std::isnan(lower_bound) || std::isnan(upper_bound)) return kBad;
    OpDesc d;
    d.kind = OpKind::kUnary;
    cnmlStatus_t s = createSameShape(op, input, output, d);
    if (s != CNML_STATUS_SUCCESS) return s;
    d.unary = UnaryFn::kClip;
    d.lower = lower_bound;
    d.upper = upper_bound;
    return finish(op, std::move(d));
  }();
  return logged(status, "cnmlCreateClipOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).value(lower_bound).value(upper_bound);
  });
}

#define PZ_UNARY_CREATE(sdk_op, fn)                                                        \
  cnmlStatus_t cnmlCreate##sdk_op##Op(cnmlBaseOp_t* op, cnmlTensor_t input,                 \
                                      cnmlTensor_t output) {                                \
    return logged(createUnary(op, input, output, fn, 1.0f), "cnmlCreate" #sdk_op "Op",      \
                  [&](Call& c) { c.created(op).handle(input).handle(output); });            \
  }
PZ_SDK_UNARY_OPS(PZ_UNARY_CREATE)
#undef PZ_UNARY_CREATE

#define PZ_REDUCE_CREATE(sdk_op, fn)                                                       \
  cnmlStatus_t cnmlCreate##sdk_op##Op(cnmlBaseOp_t* op, const int axes[], int axis_num,     \
                                      cnmlTensor_t input, cnmlTensor_t output) {            \
    return logged(createReduce(op, axes, axis_num, input, output, fn),                      \
                  "cnmlCreate" #sdk_op "Op", [&](Call& c) {                                 \
      c.created(op).ints("axes", axes, axes && axis_num > 0 ? axis_num : 0).value(axis_num) \
          .handle(input).handle(output);                                                    \
    });                                                                                     \
  }
PZ_SDK_REDUCE_OPS(PZ_REDUCE_CREATE)
#undef PZ_REDUCE_CREATE

cnmlStatus_t cnmlCreateSoftmaxOp(cnmlBaseOp_t* op, cnmlDimension_t dim, cnmlTensor_t input,
                                 cnmlTensor_t output) {
  return logged(createAlongAxis(op, OpKind::kSoftmax, dim, input, output), "cnmlCreateSoftmaxOp",
                [&](Call& c) { c.created(op).value(dim).handle(input).handle(output); });
}

cnmlStatus_t cnmlCreateNdSoftmaxOp(cnmlBaseOp_t* op, int axis, cnmlTensor_t input,
                                   cnmlTensor_t output) {
  return logged(createAlongAxis(op, OpKind::kSoftmax, axis, input, output),
                "cnmlCreateNdSoftmaxOp",
                [&](Call& c) { c.created(op).value(axis).handle(input).handle(output); });
}

cnmlStatus_t cnmlCreateNdLogSoftmaxOp(cnmlBaseOp_t* op, int axis, cnmlTensor_t input,
                                      cnmlTensor_t output) {
  return logged(createAlongAxis(op, OpKind::kLogSoftmax, axis, input, output),
                "cnmlCreateNdLogSoftmaxOp",
                [&](Call& c) { c.created(op).value(axis).handle(input).handle(output); });
}

cnmlStatus_t cnmlCreateNdLayerNormOp(cnmlBaseOp_t* op, int axis, cnmlTensor_t input,
                                     cnmlTensor_t output, cnmlTensor_t scale,
                                     cnmlTensor_t bias, float eps) {
  auto create = [&]() -> cnmlStatus_t {
    OpDesc d;
    d.kind = OpKind::kLayerNorm;
    cnmlStatus_t s = createSameShape(op, input, output, d);
    if (s != CNML_STATUS_SUCCESS) return s;
    const Dims& in = dimsOf(input);
    if (axis < 0 || static_cast<std::size_t>(axis) >= in.size()) return kBad;
    if (!(eps >= 0.0f) || !std::isfinite(eps)) return kBad;
    const std::size_t len = elementCount(Dims(in.begin() + axis, in.end()));
    if (!isWeight(scale) || elementCount(dimsOf(scale)) != len) return kBad;
    if (bias && (!isWeight(bias) || elementCount(dimsOf(bias)) != len)) return kBad;
    d.axis = axis;
    d.eps = eps;
    d.consts = {scale->impl, bias ? bias->impl : nullptr};
    return finish(op, std::move(d));
  };
  return logged(create(), "cnmlCreateNdLayerNormOp", [&](Call& c) {
    c.created(op).value(axis).handle(input).handle(output).handle(scale).handle(bias).value(eps);
  });
}

}  // extern "C"
