// Base op compile, destroy and the `_V4` forwards. A forward runs synchronously on the CPU
// and advances the queue's simulated clock by the device model's time for the op.
#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <mutex>

#include "call_log.h"
#include "compile_check.h"
#include "executor.h"
#include "device_model/op_cost.h"
#include "op_families.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), destroyLogged(), Call

namespace {

// Prepares the op's kernel on op.threads (at compile, or at its first computing forward when
// deferred); the op then holds its weights as compiled (shared, packed or the backend's).
void prepareBaseOp(cnmlBaseOp& op) {
  op.prepared = prepare(op.desc, op.threads);
  if (op.prepared->backend) op.prepared->backend->settle();  // a base op is never linked
  for (const TensorRef& t : op.desc.consts)
    if (t) releaseGiven(*t);
  op.desc.consts = op.prepared->desc.consts;
  op.deferred = false;
}

// Runs `op` when it is compiled and `accepts(op->desc)`: a forward runs only the ops its own
// creators made (the ops that share an OpKind by their function too, as a forward of
// another kind is refused).
template <typename Accepts>
cnmlStatus_t run(cnmlBaseOp_t op, Accepts accepts, const cnmlTensor_t* in_tensors,
                 void* const* inputs, int input_num, const cnmlTensor_t* out_tensors,
                 void* const* outputs, int output_num, cnrtQueue_t queue, void* extra) {
  if (!op || !accepts(op->desc)) return CNML_STATUS_INVALIDPARAM;
  if (op->fused || !op->compiled) return CNML_STATUS_INVALIDARG;
  if (!queueAlive(queue)) return CNML_STATUS_INVALIDPARAM;
  cnmlStatus_t s = checkOperands(op->desc.inputs, in_tensors, inputs, input_num);
  if (s != CNML_STATUS_SUCCESS) return s;
  s = checkOperands(op->desc.outputs, out_tensors, outputs, output_num);
  if (s != CNML_STATUS_SUCCESS) return s;
  Launch launch;
  s = checkInvokeParam(extra, op->timing, op->desc.inputs, &launch);
  if (s != CNML_STATUS_SUCCESS) return s;
  return guarded(CNML_STATUS_BADALLOC, [&] {
    // A recording that skips compute only needs the calls, not the arithmetic.
    const std::lock_guard<std::mutex> turn(op->running);
    const bool computes = !call_log::skipsCompute();
    if (computes && op->deferred) prepareBaseOp(*op);
    const auto start = std::chrono::steady_clock::now();
    if (computes) execute(*op->prepared, inputs, outputs);
    const std::chrono::duration<double, std::micro> wall =
        std::chrono::steady_clock::now() - start;
    advanceQueue(queue, backendTimesWallClock() ? wall.count() : op->timing.us(launch));
    return CNML_STATUS_SUCCESS;
  });
}

// Accepts the ops of one kind.
auto ofKind(OpKind kind) {
  return [kind](const OpDesc& d) { return d.kind == kind; };
}
bool isKind(const OpDesc& d, std::initializer_list<OpKind> kinds) {
  return std::find(kinds.begin(), kinds.end(), d.kind) != kinds.end();
}
bool isUnary(const OpDesc& d, std::initializer_list<UnaryFn> fns) {
  return d.kind == OpKind::kUnary && std::find(fns.begin(), fns.end(), d.unary) != fns.end();
}
bool isBinary(const OpDesc& d, BinaryOp which, bool broadcast) {
  return d.kind == OpKind::kBinary && d.binary == which && d.broadcast == broadcast;
}

// One input, one output: runs and logs the call the same way for every op that has one.
template <typename Accepts>
cnmlStatus_t forward1(const char* name, Accepts accepts, cnmlBaseOp_t op, cnmlTensor_t in_t,
                      void* in, cnmlTensor_t out_t, void* out, cnrtQueue_t queue, void* extra) {
  return logged(run(op, accepts, &in_t, &in, 1, &out_t, &out, 1, queue, extra), name,
                [&](Call& c) {
    c.handle(op).handle(in_t).buffer(in, in_t).handle(out_t).buffer(out, out_t).queue()
        .invoke(extra);
  });
}

// Two inputs, one output.
template <typename Accepts>
cnmlStatus_t forward2(const char* name, Accepts accepts, cnmlBaseOp_t op, cnmlTensor_t in1_t,
                      void* in1, cnmlTensor_t in2_t, void* in2, cnmlTensor_t out_t, void* out,
                      cnrtQueue_t queue, void* extra) {
  cnmlTensor_t in_t[2] = {in1_t, in2_t};
  void* in[2] = {in1, in2};
  return logged(run(op, accepts, in_t, in, 2, &out_t, &out, 1, queue, extra), name,
                [&](Call& c) {
    c.handle(op).handle(in1_t).buffer(in1, in1_t).handle(in2_t).buffer(in2, in2_t)
        .handle(out_t).buffer(out, out_t).queue().invoke(extra);
  });
}

}  // namespace

// The forward entry points that differ only by the ops they accept (`accepts`, an
// expression on the op's OpDesc `d`).
#define PZ_FORWARD1(sdk_fn, accepts)                                                       \
  cnmlStatus_t sdk_fn(cnmlBaseOp_t op, cnmlTensor_t input_tensor, void* input,             \
                      cnmlTensor_t output_tensor, void* output, cnrtQueue_t queue,         \
                      void* extra) {                                                       \
    return forward1(#sdk_fn, [](const OpDesc& d) { return accepts; }, op, input_tensor,    \
                    input, output_tensor, output, queue, extra);                           \
  }
#define PZ_FORWARD2(sdk_fn, accepts)                                                       \
  cnmlStatus_t sdk_fn(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1, void* input_1,         \
                      cnmlTensor_t input_tensor_2, void* input_2,                          \
                      cnmlTensor_t output_tensor, void* output, cnrtQueue_t queue,         \
                      void* extra) {                                                       \
    return forward2(#sdk_fn, [](const OpDesc& d) { return accepts; }, op, input_tensor_1,  \
                    input_1, input_tensor_2, input_2, output_tensor, output, queue,        \
                    extra);                                                                \
  }
#define PZ_UNARY_FORWARD(sdk_op, fn) \
  PZ_FORWARD1(cnmlCompute##sdk_op##OpForward_V4, isUnary(d, {fn}))
#define PZ_BINARY_FORWARD(sdk_op, which, broadcast) \
  PZ_FORWARD2(cnmlCompute##sdk_op##OpForward_V4, isBinary(d, which, broadcast))
#define PZ_REDUCE_FORWARD(sdk_op, fn) \
  PZ_FORWARD1(cnmlCompute##sdk_op##OpForward_V4, d.kind == OpKind::kReduce && d.reduce == fn)

extern "C" {

cnmlStatus_t cnmlCompileBaseOp(cnmlBaseOp_t op, cnmlCoreVersion_t version, int core_limit) {
  if (!op) return CNML_STATUS_INVALIDPARAM;
  cnmlStatus_t s = checkTarget(version, core_limit);
  if (s != CNML_STATUS_SUCCESS) return s;
  if (op->compiled || op->fused) return CNML_STATUS_INVALIDARG;
  if (!constsBound(op->desc)) return CNML_STATUS_INVALIDARG;
  s = checkPrecision(op->desc);
  if (s != CNML_STATUS_SUCCESS) return s;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    op->threads = threadsFor(core_limit);
    op->deferred = preparationDeferred();
    if (op->deferred) {
      // What the caller lent or handed over is the op's own now, as prepare() takes it.
      OpDesc compiled = compiledCopy(op->desc);
      ownBorrowedConsts(compiled);
      for (const TensorRef& t : op->desc.consts)
        if (t) releaseGiven(*t);
      op->desc.consts = compiled.consts;
    } else {
      prepareBaseOp(*op);
    }
    op->timing = baseOpTiming(op->desc, core_limit);
    op->compiled = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCompileBaseOp", [&](Call& c) {
    c.handle(op).value(version).value(core_limit, "core_limit");
  });
}

cnmlStatus_t cnmlDestroyBaseOp(cnmlBaseOp_t* op) {
  return destroyLogged("cnmlDestroyBaseOp", op);
}

// Conv and ConvGroup ops accept either conv forward: a plain conv is a group conv with
// group 1, and the wrapper should not need to track which creator it used (so for deconv).
PZ_FORWARD1(cnmlComputeConvOpForward_V4, isKind(d, {OpKind::kConv, OpKind::kConvGroup}))
PZ_FORWARD1(cnmlComputeConvGroupOpForward_V4, isKind(d, {OpKind::kConv, OpKind::kConvGroup}))
PZ_FORWARD1(cnmlComputeDeconvOpForward_V4, isKind(d, {OpKind::kDeconv, OpKind::kDeconvGroup}))
PZ_FORWARD1(cnmlComputeDeconvGroupOpForward_V4,
            isKind(d, {OpKind::kDeconv, OpKind::kDeconvGroup}))
PZ_FORWARD1(cnmlComputeNearestNeighborOpForward_V4, d.kind == OpKind::kNearestNeighbor)
PZ_FORWARD1(cnmlComputeInterpOpForward_V4, d.kind == OpKind::kInterp)
PZ_FORWARD1(cnmlComputePoolOpForward_V4, d.kind == OpKind::kPool)
PZ_FORWARD1(cnmlComputeActiveOpForward_V4, d.kind == OpKind::kActive)
PZ_FORWARD1(cnmlComputeBatchNormOpForward_V4, d.kind == OpKind::kBatchNorm)
PZ_FORWARD1(cnmlComputeScaleOpForward_V4, d.kind == OpKind::kScale)
PZ_FORWARD1(cnmlComputeMlpOpForward_V4, d.kind == OpKind::kMlp)
PZ_FORWARD1(cnmlComputeSoftmaxOpForward_V4, d.kind == OpKind::kSoftmax)
PZ_FORWARD1(cnmlComputeNdSoftmaxOpForward_V4, d.kind == OpKind::kSoftmax)
PZ_FORWARD1(cnmlComputeNdLogSoftmaxOpForward_V4, d.kind == OpKind::kLogSoftmax)
PZ_FORWARD1(cnmlComputeNdLayerNormOpForward_V4, d.kind == OpKind::kLayerNorm)
PZ_FORWARD1(cnmlComputeLrnOpForward_V4, d.kind == OpKind::kLrn)
PZ_FORWARD1(cnmlComputeReshapeOpForward_V4, d.kind == OpKind::kReshape)
PZ_FORWARD1(cnmlComputeTransposeProOpForward_V4, d.kind == OpKind::kTranspose)
PZ_FORWARD1(cnmlComputePreluOpForward_V4, d.kind == OpKind::kPrelu)
PZ_FORWARD1(cnmlComputeNdStridedSliceOpForward_V2, d.kind == OpKind::kSlice)
PZ_FORWARD1(cnmlComputeCastOpForward_V4, d.kind == OpKind::kCast)
PZ_FORWARD2(cnmlComputeAddOpForward_V4, d.kind == OpKind::kAdd)
PZ_FORWARD2(cnmlComputeBatchDotOpForward_V4, d.kind == OpKind::kBatchDot)

// The unary, binary and reduce families: one OpKind each, each forward runs its own ops.
PZ_SDK_UNARY_OPS(PZ_UNARY_FORWARD)
PZ_FORWARD1(cnmlComputePowerOpForward_V4, isUnary(d, {UnaryFn::kPower}))
PZ_FORWARD1(cnmlComputeGeluOpForward_V4, isUnary(d, {UnaryFn::kGelu, UnaryFn::kGeluTanh}))
PZ_FORWARD1(cnmlComputeClipOpForward_V4, isUnary(d, {UnaryFn::kClip}))
PZ_SDK_BINARY_OPS(PZ_BINARY_FORWARD)
PZ_SDK_REDUCE_OPS(PZ_REDUCE_FORWARD)

cnmlStatus_t cnmlComputeConcatOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensors[],
                                           void* inputs[], int input_num,
                                           cnmlTensor_t output_tensors[], void* outputs[],
                                           int output_num, cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run(op, ofKind(OpKind::kConcat), input_tensors, inputs, input_num,
                                  output_tensors, outputs, output_num, queue, extra);
  return logged(status, "cnmlComputeConcatOpForward_V4", [&](Call& c) {
    c.handle(op)
        .forwardLists(input_tensors, inputs, input_num, output_tensors, outputs, output_num)
        .queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeRnnOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensors[],
                                        void* inputs[], int input_num,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run(op, ofKind(OpKind::kRnn), input_tensors, inputs, input_num,
                                  &output_tensor, &output, 1, queue, extra);
  return logged(status, "cnmlComputeRnnOpForward_V4", [&](Call& c) {
    c.handle(op).tensors("inputs", input_tensors, input_num)
        .buffers("in_data", inputs, input_tensors, input_num).value(input_num)
        .handle(output_tensor).buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlMockComputeHostTransferOpForward(cnmlBaseOp_t op, cnrtQueue_t queue) {
  cnmlStatus_t status = CNML_STATUS_SUCCESS;
  if (!op || op->desc.kind != OpKind::kHostTransfer || !queueAlive(queue)) {
    status = CNML_STATUS_INVALIDPARAM;
  } else if (op->fused || !op->compiled) {
    status = CNML_STATUS_INVALIDARG;
  } else {
    advanceQueue(queue, op->timing.us());
  }
  return logged(status, "cnmlMockComputeHostTransferOpForward",
                [&](Call& c) { c.handle(op).queue(); });
}

cnmlStatus_t cnmlComputeGatherV2OpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                             void* input, cnmlTensor_t index_tensor, void* index,
                                             cnmlTensor_t output_tensor, void* output,
                                             cnrtQueue_t queue, void* extra) {
  cnmlStatus_t status;
  if (op && op->desc.kind == OpKind::kGatherV2 && input_tensor &&
      input_tensor->impl->id != op->desc.consts[0]->id) {
    status = CNML_STATUS_INVALIDPARAM;  // another table than the op was built with
  } else {
    status = run(op, ofKind(OpKind::kGatherV2), &index_tensor, &index, 1, &output_tensor,
                 &output, 1, queue, extra);
  }
  return logged(status, "cnmlComputeGatherV2OpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).opaque(input).handle(index_tensor)
        .buffer(index, index_tensor).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

}  // extern "C"

#undef PZ_REDUCE_FORWARD
#undef PZ_BINARY_FORWARD
#undef PZ_UNARY_FORWARD
#undef PZ_FORWARD2
#undef PZ_FORWARD1
