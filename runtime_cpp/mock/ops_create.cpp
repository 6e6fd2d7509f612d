// Base op creation. Every creator checks that the output tensor's dims equal what the op
// computes from its input and parameters, and that weight shapes agree (Mock rule:
// mismatch -> INVALIDPARAM), then records an OpDesc snapshot.
#include <algorithm>
#include <cmath>
#include <set>

#include "backend.h"
#include "call_log.h"
#include "op_families.h"
#include "state.h"

using namespace pz_mock;
using namespace pz_mock::call_log;  // logged(), Call

namespace {

constexpr cnmlStatus_t kBad = CNML_STATUS_INVALIDPARAM;

bool isActivation(cnmlTensor_t t) {
  return t && t->impl->shape_set && t->impl->type == CNML_TENSOR;
}
bool isWeight(cnmlTensor_t t) {
  return t && t->impl->shape_set && (t->impl->type == CNML_FILTER || t->impl->type == CNML_CONST);
}
const Dims& dimsOf(cnmlTensor_t t) { return t->impl->dims; }
Operand operand(cnmlTensor_t t) { return Operand{t->impl->id, t->impl->dims, t->impl->dtype}; }

// Output extent of a conv / floor-mode pool window along one axis; <= 0 when it does not fit.
int windowOutput(int size, int pad_sum, int k, int dil, int stride, bool ceil_mode, int pad_lo) {
  int span = size + pad_sum - dil * (k - 1) - 1;
  if (span < 0) return 0;
  int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // Ceil mode: the last window must start inside the input or the leading pad.
  if (ceil_mode && (out - 1) * stride >= size + pad_lo) --out;
  return out;
}

// Registers the op; rejects an op that writes one of its own inputs (no in-place ops:
// fusion ordering is decided by tensor identity).
// Every op but Cast computes in one precision: its activations share one dtype (Mock
// rule: INVALIDARG otherwise).
cnmlStatus_t finish(cnmlBaseOp_t* op, OpDesc&& desc) {
  if (desc.kind == OpKind::kGatherV2) {  // int32 indices in, the table's dtype out
    if (desc.inputs[0].dtype != CNML_DATA_INT32 ||
        desc.outputs[0].dtype != desc.consts[0]->dtype)
      return CNML_STATUS_INVALIDARG;
  } else if (desc.kind != OpKind::kCast && desc.kind != OpKind::kHostTransfer) {
    const cnmlDataType_t dtype = desc.inputs.at(0).dtype;
    for (const Operand& o : desc.inputs)
      if (o.dtype != dtype) return CNML_STATUS_INVALIDARG;
    for (const Operand& o : desc.outputs)
      if (o.dtype != dtype) return CNML_STATUS_INVALIDARG;
  }
  std::set<std::uint64_t> in_ids;
  for (const Operand& o : desc.inputs) in_ids.insert(o.id);
  for (const Operand& o : desc.outputs)
    if (in_ids.count(o.id)) return kBad;
  return guarded(CNML_STATUS_BADALLOC, [&] {
    auto* b = new cnmlBaseOp();
    b->desc = std::move(desc);
    *op = b;
    return CNML_STATUS_SUCCESS;
  });
}

cnmlStatus_t createConv(cnmlBaseOp_t* op, cnmlConvOpParam_t param, cnmlTensor_t input,
                        cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias, int group,
                        OpKind kind) {
  if (!op || !param || !isActivation(input) || !isActivation(output) || !isWeight(filter))
    return kBad;
  if (bias && !isWeight(bias)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output), &f = dimsOf(filter);
  if (in.size() != 4 || out.size() != 4 || f.size() != 4 || group < 1) return kBad;
  const ConvParams& p = param->p;
  if (p.sparse && kind != OpKind::kConv) return CNML_STATUS_INVALIDARG;  // MLU100: no sparse group conv
  const int ci = in[1], co = out[1];
  if (ci % group || co % group || f[0] != co || f[1] != ci / group) return kBad;
  if (bias && elementCount(dimsOf(bias)) != static_cast<std::size_t>(co)) return kBad;
  int ho = windowOutput(in[2], p.pt + p.pb, f[2], p.dh, p.sh, false, p.pt);
  int wo = windowOutput(in[3], p.pl + p.pr, f[3], p.dw, p.sw, false, p.pl);
  if (ho <= 0 || wo <= 0 || out[0] != in[0] || out[2] != ho || out[3] != wo) return kBad;
  OpDesc d;
  d.kind = kind;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.consts = {filter->impl, bias ? bias->impl : nullptr};
  d.conv = p;
  d.group = group;
  d.sparse = p.sparse;
  return finish(op, std::move(d));
}

// Deconv output extent along one axis: the full transposed convolution, cropped, plus the
// output padding; <= 0 when the crops remove everything.
int deconvOutput(int size, int k, int dil, int stride, int crop_lo, int crop_hi, int out_pad) {
  return (size - 1) * stride + dil * (k - 1) + 1 - crop_lo - crop_hi + out_pad;
}

cnmlStatus_t createDeconv(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param, cnmlTensor_t input,
                          cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias, int group,
                          OpKind kind) {
  if (!op || !param || !isActivation(input) || !isActivation(output) || !isWeight(filter))
    return kBad;
  if (bias && !isWeight(bias)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output), &f = dimsOf(filter);
  if (in.size() != 4 || out.size() != 4 || f.size() != 4 || group < 1) return kBad;
  const DeconvParams& p = param->p;
  const int ci = in[1], co = out[1];
  // Filter [ci, co / group, kh, kw].
  if (ci % group || co % group || f[0] != ci || f[1] != co / group) return kBad;
  if (bias && elementCount(dimsOf(bias)) != static_cast<std::size_t>(co)) return kBad;
  const int ho = deconvOutput(in[2], f[2], p.dh, p.sh, p.hu, p.hd, p.oph);
  const int wo = deconvOutput(in[3], f[3], p.dw, p.sw, p.wl, p.wr, p.opw);
  if (ho <= 0 || wo <= 0 || out[0] != in[0] || out[2] != ho || out[3] != wo) return kBad;
  OpDesc d;
  d.kind = kind;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.consts = {filter->impl, bias ? bias->impl : nullptr};
  d.deconv = p;
  d.group = group;
  return finish(op, std::move(d));
}

// NearestNeighbor / Interp: NCHW in and out, same N and C, output H x W from the param.
cnmlStatus_t createResize(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                          const InterpParams* p, OpKind kind) {
  if (!op || !p || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output);
  if (in.size() != 4 || out.size() != 4) return kBad;
  if (out[0] != in[0] || out[1] != in[1] || out[2] != p->out_h || out[3] != p->out_w)
    return kBad;
  OpDesc d;
  d.kind = kind;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.interp = *p;
  return finish(op, std::move(d));
}

// Unary ops whose output has the input's shape.
cnmlStatus_t createSameShape(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                             OpDesc& d) {
  if (!op || !isActivation(input) || !isActivation(output)) return kBad;
  if (dimsOf(input) != dimsOf(output)) return kBad;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  return CNML_STATUS_SUCCESS;
}

// Per-channel vectors (axis 1): length C, or 1 when `allow_scalar`.
bool channelVector(cnmlTensor_t t, int channels, bool allow_scalar) {
  if (!isWeight(t)) return false;
  std::size_t n = elementCount(dimsOf(t));
  return n == static_cast<std::size_t>(channels) || (allow_scalar && n == 1);
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
  OpDesc d;
  d.kind = OpKind::kReduce;
  d.reduce = fn;
  d.axes.assign(axes, axes + axis_num);
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  return finish(op, std::move(d));
}

// numpy's broadcast of two batch shapes (right-aligned, each pair equal or one of them 1);
// false when they do not broadcast.
bool broadcastBatch(const Dims& a, const Dims& b, Dims* out) {
  const std::size_t n = std::max(a.size(), b.size());
  out->assign(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const int da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = std::max(da, db);
  }
  return true;
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlCreateConvOp(cnmlBaseOp_t* op, cnmlConvOpParam_t param, cnmlTensor_t input,
                              cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias) {
  return logged(createConv(op, param, input, output, filter, bias, 1, OpKind::kConv),
                "cnmlCreateConvOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output).handle(filter).handle(bias);
  });
}

cnmlStatus_t cnmlCreateConvGroupOp(cnmlBaseOp_t* op, cnmlConvOpParam_t param,
                                   cnmlTensor_t input, cnmlTensor_t output, cnmlTensor_t filter,
                                   cnmlTensor_t bias, int group) {
  return logged(createConv(op, param, input, output, filter, bias, group, OpKind::kConvGroup),
                "cnmlCreateConvGroupOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output).handle(filter).handle(bias)
        .value(group);
  });
}

cnmlStatus_t cnmlCreateDeconvOp(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param, cnmlTensor_t input,
                                cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias) {
  return logged(createDeconv(op, param, input, output, filter, bias, 1, OpKind::kDeconv),
                "cnmlCreateDeconvOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output).handle(filter).handle(bias);
  });
}

cnmlStatus_t cnmlCreateDeconvGroupOp(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param,
                                     cnmlTensor_t input, cnmlTensor_t output,
                                     cnmlTensor_t filter, cnmlTensor_t bias, int group) {
  return logged(createDeconv(op, param, input, output, filter, bias, group, OpKind::kDeconvGroup),
                "cnmlCreateDeconvGroupOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output).handle(filter).handle(bias)
        .value(group);
  });
}

cnmlStatus_t cnmlCreateNearestNeighborOp(cnmlBaseOp_t* op, cnmlTensor_t input,
                                         cnmlTensor_t output,
                                         cnmlNearestNeighborOpParam_t param) {
  return logged(
      createResize(op, input, output, param ? &param->p : nullptr, OpKind::kNearestNeighbor),
      "cnmlCreateNearestNeighborOp",
      [&](Call& c) { c.created(op).handle(input).handle(output).handle(param); });
}

cnmlStatus_t cnmlCreateInterpOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                                cnmlInterpOpParam_t param) {
  return logged(createResize(op, input, output, param ? &param->p : nullptr, OpKind::kInterp),
                "cnmlCreateInterpOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(param);
  });
}

cnmlStatus_t cnmlCreatePoolOp(cnmlBaseOp_t* op, cnmlPoolOpParam_t param, cnmlTensor_t input,
                              cnmlTensor_t output) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output);
  if (in.size() != 4 || out.size() != 4) return kBad;
  const PoolParams& p = param->p;
  bool ceil_mode = p.strategy == CNML_POOL_KFULL;
  int ho = windowOutput(in[2], p.pt + p.pb, p.kh, p.dh, p.sh, ceil_mode, p.pt);
  int wo = windowOutput(in[3], p.pl + p.pr, p.kw, p.dw, p.sw, ceil_mode, p.pl);
  if (ho <= 0 || wo <= 0 || out[0] != in[0] || out[1] != in[1] || out[2] != ho || out[3] != wo)
    return kBad;
  OpDesc d;
  d.kind = OpKind::kPool;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.pool = p;
  return logged(finish(op, std::move(d)), "cnmlCreatePoolOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
  });
}

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
  OpDesc d;
  d.kind = OpKind::kBatchNorm;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  if (s != CNML_STATUS_SUCCESS) return s;
  const Dims& in = dimsOf(input);
  if (in.size() < 2 || !channelVector(mean, in[1], false) || !channelVector(var, in[1], false))
    return kBad;
  d.consts = {mean->impl, var->impl};
  return logged(finish(op, std::move(d)), "cnmlCreateBatchNormOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(mean).handle(var);
  });
}

cnmlStatus_t cnmlCreateScaleOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               cnmlTensor_t alpha, cnmlTensor_t beta) {
  OpDesc d;
  d.kind = OpKind::kScale;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  if (s != CNML_STATUS_SUCCESS) return s;
  const Dims& in = dimsOf(input);
  if (in.size() < 2 || !channelVector(alpha, in[1], true)) return kBad;
  if (beta && !channelVector(beta, in[1], true)) return kBad;
  d.consts = {alpha->impl, beta ? beta->impl : nullptr};
  return logged(finish(op, std::move(d)), "cnmlCreateScaleOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(alpha).handle(beta);
  });
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
PZ_MOCK_BINARY_OPS(PZ_BINARY_CREATE)
#undef PZ_BINARY_CREATE

cnmlStatus_t cnmlCreatePreluOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                               cnmlTensor_t prelu_param) {
  OpDesc d;
  d.kind = OpKind::kPrelu;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  if (s != CNML_STATUS_SUCCESS) return s;
  const Dims& in = dimsOf(input);
  if (in.size() < 2 || !channelVector(prelu_param, in[1], true)) return kBad;
  d.consts = {prelu_param->impl};
  return logged(finish(op, std::move(d)), "cnmlCreatePreluOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(prelu_param);
  });
}

cnmlStatus_t cnmlCreateMlpOp(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                             cnmlTensor_t filter, cnmlTensor_t bias, cnmlSparseMode_t sparse) {
  if (!op || !isActivation(input) || !isActivation(output) || !isWeight(filter)) return kBad;
  if (sparse != CNML_NoSparse && sparse != CNML_Sparse) return kBad;
  if (bias && !isWeight(bias)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output), &f = dimsOf(filter);
  const std::size_t k = elementCount(in) / in[0];
  if (f.size() != 2 && f.size() != 4) return kBad;
  const int co = f[0];
  if (elementCount(f) / co != k) return kBad;
  bool out_ok = (out.size() == 2 && out[0] == in[0] && out[1] == co) ||
                (out.size() == 4 && out[0] == in[0] && out[1] == co && out[2] == 1 && out[3] == 1);
  if (!out_ok) return kBad;
  if (bias && elementCount(dimsOf(bias)) != static_cast<std::size_t>(co)) return kBad;
  OpDesc d;
  d.kind = OpKind::kMlp;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.consts = {filter->impl, bias ? bias->impl : nullptr};
  d.sparse = sparse == CNML_Sparse;
  return logged(finish(op, std::move(d)), "cnmlCreateMlpOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(filter).handle(bias).value(sparse);
  });
}

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

cnmlStatus_t cnmlCreateBatchDotOp(cnmlBaseOp_t* op, cnmlTensor_t a, cnmlTensor_t b,
                                  cnmlTensor_t output, bool trans_a, bool trans_b) {
  auto create = [&]() -> cnmlStatus_t {
    if (!op || !isActivation(a) || !isActivation(b) || !isActivation(output)) return kBad;
    const Dims &da = dimsOf(a), &db = dimsOf(b);
    if (da.size() < 2 || db.size() < 2) return kBad;
    const std::size_t ra = da.size(), rb = db.size();
    const int m = trans_a ? da[ra - 1] : da[ra - 2], ka = trans_a ? da[ra - 2] : da[ra - 1];
    const int kb = trans_b ? db[rb - 1] : db[rb - 2], n = trans_b ? db[rb - 2] : db[rb - 1];
    if (ka != kb) return kBad;
    Dims batch;
    if (!broadcastBatch(Dims(da.begin(), da.end() - 2), Dims(db.begin(), db.end() - 2), &batch))
      return kBad;
    batch.push_back(m);
    batch.push_back(n);
    if (dimsOf(output) != batch) return kBad;
    OpDesc d;
    d.kind = OpKind::kBatchDot;
    d.inputs = {operand(a), operand(b)};
    d.outputs = {operand(output)};
    d.trans_a = trans_a;
    d.trans_b = trans_b;
    return finish(op, std::move(d));
  };
  return logged(create(), "cnmlCreateBatchDotOp", [&](Call& c) {
    c.created(op).handle(a).handle(b).handle(output).value(trans_a).value(trans_b);
  });
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

cnmlStatus_t cnmlCreateRnnOp(cnmlBaseOp_t* op, cnmlRnnCell_t cell, bool reverse,
                             bool batch_first, cnmlRnnOutput_t output_kind, cnmlTensor_t input,
                             cnmlTensor_t initial_h, cnmlTensor_t initial_c,
                             cnmlTensor_t output, cnmlTensor_t weight, cnmlTensor_t recurrence,
                             cnmlTensor_t bias, cnmlTensor_t peephole) {
  auto create = [&]() -> cnmlStatus_t {
    if (!op || !isActivation(input) || !isActivation(output)) return kBad;
    if (cell < CNML_RNN_LSTM || cell > CNML_RNN_SIGMOID) return kBad;
    if (output_kind < CNML_RNN_OUTPUT_Y || output_kind > CNML_RNN_OUTPUT_C) return kBad;
    const bool lstm = cell == CNML_RNN_LSTM;
    if ((initial_c || peephole || output_kind == CNML_RNN_OUTPUT_C) && !lstm) return kBad;
    const Dims& x = dimsOf(input);
    if (x.size() != 3 || !isWeight(recurrence) || dimsOf(recurrence).size() != 2) return kBad;
    const int hidden = dimsOf(recurrence)[1];
    const int gates = lstm ? 4 : cell == CNML_RNN_GRU || cell == CNML_RNN_GRU_LINEAR_BEFORE_RESET
                                     ? 3 : 1;
    const int steps = batch_first ? x[1] : x[0], batch = batch_first ? x[0] : x[1];
    if (dimsOf(recurrence) != Dims{gates * hidden, hidden}) return kBad;
    if (!isWeight(weight) || dimsOf(weight) != Dims{gates * hidden, x[2]}) return kBad;
    if (bias && (!isWeight(bias) || dimsOf(bias) != Dims{2 * gates * hidden})) return kBad;
    if (peephole && (!isWeight(peephole) || dimsOf(peephole) != Dims{3 * hidden})) return kBad;
    const Dims state{batch, hidden};
    for (cnmlTensor_t s : {initial_h, initial_c})
      if (s && (!isActivation(s) || dimsOf(s) != state)) return kBad;
    const Dims y = output_kind != CNML_RNN_OUTPUT_Y ? state
                   : batch_first                    ? Dims{batch, steps, hidden}
                                                    : Dims{steps, batch, hidden};
    if (dimsOf(output) != y) return kBad;
    OpDesc d;
    d.kind = OpKind::kRnn;
    d.inputs = {operand(input)};
    if (initial_h) d.inputs.push_back(operand(initial_h));
    if (initial_c) d.inputs.push_back(operand(initial_c));
    d.outputs = {operand(output)};
    d.consts = {weight->impl, recurrence->impl, bias ? bias->impl : nullptr,
                peephole ? peephole->impl : nullptr};
    d.rnn = RnnParams{cell, output_kind, reverse, batch_first, initial_h != nullptr,
                      initial_c != nullptr, hidden, gates};
    // Asked before finish(): an op the backend would not run is never registered.
    if (!backendComputesRecurrent(d)) return CNML_STATUS_UNSUPPORT;
    return finish(op, std::move(d));
  };
  return logged(create(), "cnmlCreateRnnOp", [&](Call& c) {
    c.created(op).value(static_cast<int>(cell), "cell").value(reverse).value(batch_first)
        .value(static_cast<int>(output_kind), "output_kind").handle(input).handle(initial_h)
        .handle(initial_c).handle(output).handle(weight).handle(recurrence).handle(bias)
        .handle(peephole);
  });
}

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

PZ_MOCK_UNARY_OPS(PZ_UNARY_CREATE)
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

PZ_MOCK_REDUCE_OPS(PZ_REDUCE_CREATE)
#undef PZ_REDUCE_CREATE

cnmlStatus_t cnmlCreateNdConcatOp(cnmlBaseOp_t* op, int dim, cnmlTensor_t inputs[],
                                  int input_num, cnmlTensor_t outputs[], int output_num) {
  if (!op || !inputs || !outputs || input_num < 1 || output_num != 1) return kBad;
  if (!isActivation(outputs[0])) return kBad;
  const Dims& out = dimsOf(outputs[0]);
  if (dim < 0 || static_cast<std::size_t>(dim) >= out.size()) return kBad;
  OpDesc d;
  d.kind = OpKind::kConcat;
  d.axis = dim;
  long long total = 0;
  for (int i = 0; i < input_num; ++i) {
    // Mock rule: an operand may be a CNML_CONST tensor (its data bound before compile, as
    // every const), e.g. a class token before a transformer's patch tokens.
    const bool constant = inputs[i] && inputs[i]->impl->shape_set &&
                          inputs[i]->impl->type == CNML_CONST;
    if (!isActivation(inputs[i]) && !constant) return kBad;
    const Dims& in = dimsOf(inputs[i]);
    if (in.size() != out.size()) return kBad;
    for (std::size_t a = 0; a < in.size(); ++a)
      if (static_cast<int>(a) != dim && in[a] != out[a]) return kBad;
    total += in[dim];
    if (constant) {
      d.pieces.push_back(-1 - static_cast<int>(d.consts.size()));
      d.consts.push_back(inputs[i]->impl);
    } else {
      d.pieces.push_back(static_cast<int>(d.inputs.size()));
      d.inputs.push_back(operand(inputs[i]));
    }
  }
  if (total != out[dim]) return kBad;
  // Mock rule: a concat of consts only is no device work; the caller folds it.
  if (d.inputs.empty()) return CNML_STATUS_UNSUPPORT;
  d.outputs = {operand(outputs[0])};
  return logged(finish(op, std::move(d)), "cnmlCreateNdConcatOp", [&](Call& c) {
    c.created(op).value(dim).tensors("inputs", inputs, input_num).value(input_num)
        .tensors("outputs", outputs, output_num).value(output_num);
  });
}

cnmlStatus_t cnmlCreateLrnOp(cnmlBaseOp_t* op, cnmlLrnOpParam_t param, cnmlTensor_t input,
                             cnmlTensor_t output) {
  if (!param) return kBad;
  OpDesc d;
  d.kind = OpKind::kLrn;
  cnmlStatus_t s = createSameShape(op, input, output, d);
  if (s != CNML_STATUS_SUCCESS) return s;
  if (dimsOf(input).size() < 2) return kBad;
  d.lrn = param->p;
  return logged(finish(op, std::move(d)), "cnmlCreateLrnOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlCreateReshapeOp(cnmlBaseOp_t* op, cnmlReshapeOpParam_t param,
                                 cnmlTensor_t input, cnmlTensor_t output) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  if (param->dims != dimsOf(output)) return kBad;
  if (elementCount(dimsOf(input)) != elementCount(dimsOf(output))) return kBad;
  OpDesc d;
  d.kind = OpKind::kReshape;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  return logged(finish(op, std::move(d)), "cnmlCreateReshapeOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlCreateNdTransposeProOp(cnmlBaseOp_t* op, cnmlTensor_t input,
                                        cnmlTensor_t output, cnmlTransposeOpParam_t param) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output);
  const Dims& perm = param->order;
  if (perm.size() != in.size() || out.size() != in.size()) return kBad;
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (out[i] != in[perm[i]]) return kBad;
  OpDesc d;
  d.kind = OpKind::kTranspose;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.perm = perm;
  return logged(finish(op, std::move(d)), "cnmlCreateNdTransposeProOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(param);
  });
}

cnmlStatus_t cnmlCreateNdStridedSliceOp(cnmlBaseOp_t* op, cnmlNdStridedSliceOpParam_t param,
                                        cnmlTensor_t input, cnmlTensor_t output) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output);
  const SliceParams& p = param->p;
  if (p.begin.size() != in.size() || out.size() != in.size()) return kBad;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (p.end[i] > in[i]) return kBad;
    if (out[i] != (p.end[i] - p.begin[i] + p.stride[i] - 1) / p.stride[i]) return kBad;
  }
  OpDesc d;
  d.kind = OpKind::kSlice;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  d.slice = p;
  return logged(finish(op, std::move(d)), "cnmlCreateNdStridedSliceOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlCreateCastOp(cnmlBaseOp_t* op, cnmlCastType_t cast_type, cnmlTensor_t input,
                              cnmlTensor_t output) {
  if (!op || !isActivation(input) || !isActivation(output)) return kBad;
  if (cast_type < CNML_CAST_FLOAT32_TO_UINT8 || cast_type > CNML_CAST_FLOAT16_TO_INT16 ||
      cast_type == 2)
    return kBad;
  cnmlDataType_t from, to;
  if (cast_type == CNML_CAST_FLOAT32_TO_FLOAT16) {
    from = CNML_DATA_FLOAT32;
    to = CNML_DATA_FLOAT16;
  } else if (cast_type == CNML_CAST_FLOAT16_TO_FLOAT32) {
    from = CNML_DATA_FLOAT16;
    to = CNML_DATA_FLOAT32;
  } else {
    return CNML_STATUS_UNSUPPORT;
  }
  if (dimsOf(input) != dimsOf(output)) return kBad;
  if (input->impl->dtype != from || output->impl->dtype != to) return CNML_STATUS_INVALIDARG;
  OpDesc d;
  d.kind = OpKind::kCast;
  d.cast = cast_type;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  return logged(finish(op, std::move(d)), "cnmlCreateCastOp", [&](Call& c) {
    c.created(op).value(cast_type).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlSetOperationComputingDataType(cnmlBaseOp_t op, cnmlTensor_t tensor,
                                               cnmlDataType_t dtype,
                                               cnmlQuantizedParam_t param) {
  if (!op || !tensor) return kBad;
  if (op->compiled || op->fused) return CNML_STATUS_INVALIDARG;
  if (dtype != CNML_DATA_INT8) return CNML_STATUS_UNSUPPORT;
  OpDesc& d = op->desc;
  if (d.kind != OpKind::kConv && d.kind != OpKind::kConvGroup && d.kind != OpKind::kMlp)
    return CNML_STATUS_UNSUPPORT;
  if (d.inputs.empty() || d.inputs[0].id != tensor->impl->id) return kBad;
  if (!param) return kBad;
  d.int8 = true;
  d.in_position = param->position;
  d.in_scale = param->scale;
  return logged(CNML_STATUS_SUCCESS, "cnmlSetOperationComputingDataType", [&](Call& c) {
    c.handle(op).handle(tensor).value(dtype).handle(param);
  });
}

cnmlStatus_t cnmlMockCreateHostTransferOp(cnmlBaseOp_t* op, cnmlTensor_t inputs[],
                                          int input_num, cnmlTensor_t output,
                                          size_t to_host_bytes, size_t to_device_bytes) {
  if (!op || !inputs || input_num < 1 || !isActivation(output)) return kBad;
  OpDesc d;
  d.kind = OpKind::kHostTransfer;
  for (int i = 0; i < input_num; ++i) {
    if (!isActivation(inputs[i])) return kBad;
    d.inputs.push_back(operand(inputs[i]));
  }
  d.outputs = {operand(output)};
  d.to_host_bytes = static_cast<double>(to_host_bytes);
  d.to_device_bytes = static_cast<double>(to_device_bytes);
  return logged(finish(op, std::move(d)), "cnmlMockCreateHostTransferOp", [&](Call& c) {
    c.created(op).value(input_num).handle(output).value(to_host_bytes).value(to_device_bytes);
  });
}

cnmlStatus_t cnmlCreateGatherV2Op(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t index,
                                  cnmlTensor_t output, cnmlDimension_t dim) {
  if (!op || !input || !input->impl->shape_set || !isActivation(index) || !isActivation(output))
    return kBad;
  if (input->impl->type != CNML_CONST) return CNML_STATUS_UNSUPPORT;  // Mock: tables only
  const Dims &table = dimsOf(input), &idx = dimsOf(index), &out = dimsOf(output);
  const int axis = static_cast<int>(dim);
  if (axis < 0 || axis > 3 || axis >= static_cast<int>(table.size())) return kBad;
  Dims want(table.begin(), table.begin() + axis);
  want.insert(want.end(), idx.begin(), idx.end());
  want.insert(want.end(), table.begin() + axis + 1, table.end());
  if (out != want) return kBad;
  OpDesc d;
  d.kind = OpKind::kGatherV2;
  d.axis = axis;
  d.inputs = {operand(index)};
  d.outputs = {operand(output)};
  d.consts = {input->impl};
  return logged(finish(op, std::move(d)), "cnmlCreateGatherV2Op", [&](Call& c) {
    c.created(op).handle(input).handle(index).handle(output).value(dim);
  });
}

}  // extern "C"
