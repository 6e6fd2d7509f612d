// Base op creation. Every creator checks that the output tensor's dims equal what the op
// computes from its input and parameters, and that weight shapes agree (Mock rule:
// mismatch -> INVALIDPARAM), then records an OpDesc snapshot. Here: the common rules, and
// the ops with weights or windows (conv, deconv, resize, pool, mlp, batch dot, rnn, lrn).
#include <algorithm>
#include <optional>
#include <set>

#include "compute_backend.h"
#include "call_log.h"
#include "ops_create.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), Call
using namespace pz_sdk::create;

namespace pz_sdk {
namespace create {

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

cnmlStatus_t createSameShape(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                             OpDesc& d) {
  if (!op || !isActivation(input) || !isActivation(output)) return kBad;
  if (dimsOf(input) != dimsOf(output)) return kBad;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  return CNML_STATUS_SUCCESS;
}

}  // namespace create
}  // namespace pz_sdk

namespace {

// Output extent of a conv / floor-mode pool window along one axis; <= 0 when it does not fit.
int windowOutput(int size, int pad_sum, int k, int dil, int stride, bool ceil_mode, int pad_lo) {
  int span = size + pad_sum - dil * (k - 1) - 1;
  if (span < 0) return 0;
  int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // Ceil mode: the last window must start inside the input or the leading pad.
  if (ceil_mode && (out - 1) * stride >= size + pad_lo) --out;
  return out;
}

// Conv and deconv operands: 4-D activations in and out, a 4-D filter, an optional bias and
// a positive group count.
bool filteredOperands(cnmlTensor_t input, cnmlTensor_t output, cnmlTensor_t filter,
                      cnmlTensor_t bias, int group) {
  if (!isActivation(input) || !isActivation(output) || !isWeight(filter)) return false;
  if (bias && !isWeight(bias)) return false;
  return dimsOf(input).size() == 4 && dimsOf(output).size() == 4 &&
         dimsOf(filter).size() == 4 && group >= 1;
}

// A conv or deconv op over checked operands (filteredOperands) whose window arithmetic gave
// the output extents ho x wo, before its window parameters; nothing when a shape does not
// fit: channels divisible by the group, a filter [co, ci / group, kh, kw] (conv) or
// [ci, co / group, kh, kw] (deconv: `transposed`), a bias of co, an output of N x co x ho x wo.
std::optional<OpDesc> filteredOp(OpKind kind, cnmlTensor_t input, cnmlTensor_t output,
                                 cnmlTensor_t filter, cnmlTensor_t bias, int group,
                                 bool transposed, int ho, int wo) {
  const Dims &in = dimsOf(input), &out = dimsOf(output), &f = dimsOf(filter);
  const int ci = in[1], co = out[1];
  const int f0 = transposed ? ci : co, f1 = transposed ? co / group : ci / group;
  if (ci % group || co % group || f[0] != f0 || f[1] != f1) return std::nullopt;
  if (bias && elementCount(dimsOf(bias)) != static_cast<std::size_t>(co)) return std::nullopt;
  if (ho <= 0 || wo <= 0 || out[0] != in[0] || out[2] != ho || out[3] != wo) return std::nullopt;
  OpDesc d = oneToOne(kind, input, output);
  d.consts = {filter->impl, bias ? bias->impl : nullptr};
  d.group = group;
  return d;
}

cnmlStatus_t createFiltered(cnmlBaseOp_t* op, cnmlConvOpParam_t param, cnmlTensor_t input,
                            cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias, int group,
                            OpKind kind) {
  if (!op || !param || !filteredOperands(input, output, filter, bias, group)) return kBad;
  const ConvParams& p = param->p;
  if (p.sparse && kind != OpKind::kConv) return CNML_STATUS_INVALIDARG;  // MLU100: no sparse group conv
  const Dims &in = dimsOf(input), &f = dimsOf(filter);
  std::optional<OpDesc> d =
      filteredOp(kind, input, output, filter, bias, group, false,
                 windowOutput(in[2], p.pt + p.pb, f[2], p.dh, p.sh, false, p.pt),
                 windowOutput(in[3], p.pl + p.pr, f[3], p.dw, p.sw, false, p.pl));
  if (!d) return kBad;
  d->conv = p;
  d->sparse = p.sparse;
  return finish(op, std::move(*d));
}

// Deconv output extent along one axis: the full transposed convolution, cropped, plus the
// output padding; <= 0 when the crops remove everything.
int deconvOutput(int size, int k, int dil, int stride, int crop_lo, int crop_hi, int out_pad) {
  return (size - 1) * stride + dil * (k - 1) + 1 - crop_lo - crop_hi + out_pad;
}

cnmlStatus_t createFiltered(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param, cnmlTensor_t input,
                            cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias, int group,
                            OpKind kind) {
  if (!op || !param || !filteredOperands(input, output, filter, bias, group)) return kBad;
  const DeconvParams& p = param->p;
  const Dims &in = dimsOf(input), &f = dimsOf(filter);
  std::optional<OpDesc> d =
      filteredOp(kind, input, output, filter, bias, group, true,
                 deconvOutput(in[2], f[2], p.dh, p.sh, p.hu, p.hd, p.oph),
                 deconvOutput(in[3], f[3], p.dw, p.sw, p.wl, p.wr, p.opw));
  if (!d) return kBad;
  d->deconv = p;
  return finish(op, std::move(*d));
}

// NearestNeighbor / Interp: NCHW in and out, same N and C, output H x W from the param.
cnmlStatus_t createResize(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                          const InterpParams* p, OpKind kind) {
  if (!op || !p || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims &in = dimsOf(input), &out = dimsOf(output);
  if (in.size() != 4 || out.size() != 4) return kBad;
  if (out[0] != in[0] || out[1] != in[1] || out[2] != p->out_h || out[3] != p->out_w)
    return kBad;
  OpDesc d = oneToOne(kind, input, output);
  d.interp = *p;
  return finish(op, std::move(d));
}

// The entry points of conv and deconv (cnmlCreate{Conv,Deconv}[Group]Op), recorded with
// the group count only where they take one.
template <typename Param>
cnmlStatus_t createFilteredLogged(const char* fn, OpKind kind, cnmlBaseOp_t* op, Param param,
                                  cnmlTensor_t input, cnmlTensor_t output, cnmlTensor_t filter,
                                  cnmlTensor_t bias, int group) {
  const bool grouped = kind == OpKind::kConvGroup || kind == OpKind::kDeconvGroup;
  return logged(createFiltered(op, param, input, output, filter, bias, group, kind), fn,
                [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output).handle(filter).handle(bias);
    if (grouped) c.value(group);
  });
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
  return createFilteredLogged("cnmlCreateConvOp", OpKind::kConv, op, param, input, output,
                              filter, bias, 1);
}

cnmlStatus_t cnmlCreateConvGroupOp(cnmlBaseOp_t* op, cnmlConvOpParam_t param,
                                   cnmlTensor_t input, cnmlTensor_t output, cnmlTensor_t filter,
                                   cnmlTensor_t bias, int group) {
  return createFilteredLogged("cnmlCreateConvGroupOp", OpKind::kConvGroup, op, param, input,
                              output, filter, bias, group);
}

cnmlStatus_t cnmlCreateDeconvOp(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param, cnmlTensor_t input,
                                cnmlTensor_t output, cnmlTensor_t filter, cnmlTensor_t bias) {
  return createFilteredLogged("cnmlCreateDeconvOp", OpKind::kDeconv, op, param, input, output,
                              filter, bias, 1);
}

cnmlStatus_t cnmlCreateDeconvGroupOp(cnmlBaseOp_t* op, cnmlDeconvOpParam_t param,
                                     cnmlTensor_t input, cnmlTensor_t output,
                                     cnmlTensor_t filter, cnmlTensor_t bias, int group) {
  return createFilteredLogged("cnmlCreateDeconvGroupOp", OpKind::kDeconvGroup, op, param, input,
                              output, filter, bias, group);
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
  OpDesc d = oneToOne(OpKind::kPool, input, output);
  d.pool = p;
  return logged(finish(op, std::move(d)), "cnmlCreatePoolOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
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
  OpDesc d = oneToOne(OpKind::kMlp, input, output);
  d.consts = {filter->impl, bias ? bias->impl : nullptr};
  d.sparse = sparse == CNML_Sparse;
  return logged(finish(op, std::move(d)), "cnmlCreateMlpOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(filter).handle(bias).value(sparse);
  });
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

}  // extern "C"
