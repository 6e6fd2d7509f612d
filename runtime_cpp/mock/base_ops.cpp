// Base op compile, destroy and the `_V4` forwards. A forward runs synchronously on the CPU
// and advances the queue's simulated clock by the device model's time for the op.
#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <mutex>

#include "call_log.h"
#include "compile_check.h"
#include "executor.h"
#include "op_cost.h"

using namespace pz_mock;
using namespace pz_mock::call_log;  // logged(), doomed(), Call

namespace {

cnmlStatus_t run(cnmlBaseOp_t op, std::initializer_list<OpKind> kinds,
                 const cnmlTensor_t* in_tensors, void* const* inputs, int input_num,
                 const cnmlTensor_t* out_tensors, void* const* outputs, int output_num,
                 cnrtQueue_t queue, void* extra) {
  if (!op) return CNML_STATUS_INVALIDPARAM;
  bool kind_ok = false;
  for (OpKind k : kinds) kind_ok = kind_ok || op->desc.kind == k;
  if (!kind_ok) return CNML_STATUS_INVALIDPARAM;
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
    const auto start = std::chrono::steady_clock::now();
    if (!call_log::skipsCompute()) execute(*op->prepared, inputs, outputs);
    const std::chrono::duration<double, std::micro> wall =
        std::chrono::steady_clock::now() - start;
    advanceQueue(queue, backendTimesWallClock() ? wall.count() : op->timing.us(launch));
    return CNML_STATUS_SUCCESS;
  });
}

// Single input, single output forwards.
cnmlStatus_t run1(cnmlBaseOp_t op, std::initializer_list<OpKind> kinds, cnmlTensor_t in_t,
                  void* in, cnmlTensor_t out_t, void* out, cnrtQueue_t queue, void* extra) {
  return run(op, kinds, &in_t, &in, 1, &out_t, &out, 1, queue, extra);
}

// Two inputs, one output.
cnmlStatus_t run2(cnmlBaseOp_t op, std::initializer_list<OpKind> kinds, cnmlTensor_t in1_t,
                  void* in1, cnmlTensor_t in2_t, void* in2, cnmlTensor_t out_t, void* out,
                  cnrtQueue_t queue, void* extra) {
  cnmlTensor_t in_t[2] = {in1_t, in2_t};
  void* in[2] = {in1, in2};
  return run(op, kinds, in_t, in, 2, &out_t, &out, 1, queue, extra);
}

// The Sub/Mult/RealDiv/Broadcast* forwards share one op kind; each runs only ops made by
// its own creator, as a forward of another kind is refused.
cnmlStatus_t runBinary(cnmlBaseOp_t op, BinaryOp which, bool broadcast, cnmlTensor_t in1_t,
                       void* in1, cnmlTensor_t in2_t, void* in2, cnmlTensor_t out_t, void* out,
                       cnrtQueue_t queue, void* extra) {
  if (op && op->desc.kind == OpKind::kBinary &&
      (op->desc.binary != which || op->desc.broadcast != broadcast))
    return CNML_STATUS_INVALIDPARAM;
  return run2(op, {OpKind::kBinary}, in1_t, in1, in2_t, in2, out_t, out, queue, extra);
}

// The Sqrt/Rsqrt/Power/Erf/Gelu forwards share one op kind; each runs only its own ops.
cnmlStatus_t runUnary(cnmlBaseOp_t op, std::initializer_list<UnaryFn> fns, cnmlTensor_t in_t,
                      void* in, cnmlTensor_t out_t, void* out, cnrtQueue_t queue,
                      void* extra) {
  if (op && op->desc.kind == OpKind::kUnary &&
      std::find(fns.begin(), fns.end(), op->desc.unary) == fns.end())
    return CNML_STATUS_INVALIDPARAM;
  return run1(op, {OpKind::kUnary}, in_t, in, out_t, out, queue, extra);
}

// Logs a one-input forward the same way for every op that has one.
cnmlStatus_t logged1(cnmlStatus_t status, const char* name, cnmlBaseOp_t op, cnmlTensor_t in_t,
                     void* in, cnmlTensor_t out_t, void* out, void* extra) {
  return logged(status, name, [&](Call& c) {
    c.handle(op).handle(in_t).buffer(in, in_t).handle(out_t).buffer(out, out_t).queue()
        .invoke(extra);
  });
}

}  // namespace

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
    op->prepared = prepare(op->desc, threadsFor(core_limit));
    if (op->prepared->backend) op->prepared->backend->settle();  // a base op is never linked
    // The op holds its weights as compiled now (shared, packed or the backend's).
    for (const TensorRef& t : op->desc.consts)
      if (t) releaseGiven(*t);
    op->desc.consts = op->prepared->desc.consts;
    op->timing = baseOpTiming(op->desc, core_limit);
    op->compiled = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCompileBaseOp", [&](Call& c) {
    c.handle(op).value(version).value(core_limit, "core_limit");
  });
}

cnmlStatus_t cnmlDestroyBaseOp(cnmlBaseOp_t* op) {
  const Doomed gone = doomed(op);
  if (!op || !*op) return CNML_STATUS_INVALIDPARAM;
  delete *op;
  *op = nullptr;
  return logged(CNML_STATUS_SUCCESS, "cnmlDestroyBaseOp", [&](Call& c) { c.destroyed(gone); });
}

// Conv and ConvGroup ops accept either conv forward: a plain conv is a group conv with
// group 1, and the wrapper should not need to track which creator it used.
cnmlStatus_t cnmlComputeConvOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                         void* input, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run1(op, {OpKind::kConv, OpKind::kConvGroup}, input_tensor, input,
                                   output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeConvOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeConvGroupOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                              void* input, cnmlTensor_t output_tensor,
                                              void* output, cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run1(op, {OpKind::kConv, OpKind::kConvGroup}, input_tensor, input,
                                   output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeConvGroupOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeDeconvOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                           void* input, cnmlTensor_t output_tensor,
                                           void* output, cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run1(op, {OpKind::kDeconv, OpKind::kDeconvGroup}, input_tensor, input,
                                   output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeDeconvOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeDeconvGroupOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                void* input, cnmlTensor_t output_tensor,
                                                void* output, cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run1(op, {OpKind::kDeconv, OpKind::kDeconvGroup}, input_tensor, input,
                                   output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeDeconvGroupOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeNearestNeighborOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                    void* input, cnmlTensor_t output_tensor,
                                                    void* output, cnrtQueue_t queue, void* extra) {
  return logged(
      run1(op, {OpKind::kNearestNeighbor}, input_tensor, input, output_tensor, output, queue, extra),
      "cnmlComputeNearestNeighborOpForward_V4", [&](Call& c) {
        c.handle(op)
            .handle(input_tensor)
            .buffer(input, input_tensor)
            .handle(output_tensor)
            .buffer(output, output_tensor)
            .queue()
            .invoke(extra);
      });
}

cnmlStatus_t cnmlComputeInterpOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                           void* input, cnmlTensor_t output_tensor,
                                           void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kInterp}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeInterpOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputePoolOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                         void* input, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kPool}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputePoolOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeActiveOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                           void* input, cnmlTensor_t output_tensor,
                                           void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kActive}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeActiveOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeBatchNormOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                              void* input, cnmlTensor_t output_tensor,
                                              void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kBatchNorm}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeBatchNormOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeScaleOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                          void* input, cnmlTensor_t output_tensor, void* output,
                                          cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kScale}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeScaleOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeAddOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                        void* input_1, cnmlTensor_t input_tensor_2,
                                        void* input_2, cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run2(op, {OpKind::kAdd}, input_tensor_1, input_1, input_tensor_2,
                                   input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeAddOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeSubOpForward_V4(cnmlBaseOp_t op,
                                        cnmlTensor_t input_tensor_1, void* input_1,
                                        cnmlTensor_t input_tensor_2, void* input_2,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = runBinary(op, BinaryOp::kSub, false, input_tensor_1, input_1,
                                        input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeSubOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeMultOpForward_V4(cnmlBaseOp_t op,
                                         cnmlTensor_t input_tensor_1, void* input_1,
                                         cnmlTensor_t input_tensor_2, void* input_2,
                                         cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = runBinary(op, BinaryOp::kMult, false, input_tensor_1, input_1,
                                        input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeMultOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeRealDivOpForward_V4(cnmlBaseOp_t op,
                                            cnmlTensor_t input_tensor_1, void* input_1,
                                            cnmlTensor_t input_tensor_2, void* input_2,
                                            cnmlTensor_t output_tensor, void* output,
                                            cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = runBinary(op, BinaryOp::kRealDiv, false, input_tensor_1, input_1,
                                        input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeRealDivOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeBroadcastAddOpForward_V4(cnmlBaseOp_t op,
                                                 cnmlTensor_t input_tensor_1, void* input_1,
                                                 cnmlTensor_t input_tensor_2, void* input_2,
                                                 cnmlTensor_t output_tensor, void* output,
                                                 cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = runBinary(op, BinaryOp::kAdd, true, input_tensor_1, input_1,
                                        input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeBroadcastAddOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeBroadcastSubOpForward_V4(cnmlBaseOp_t op,
                                                 cnmlTensor_t input_tensor_1, void* input_1,
                                                 cnmlTensor_t input_tensor_2, void* input_2,
                                                 cnmlTensor_t output_tensor, void* output,
                                                 cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = runBinary(op, BinaryOp::kSub, true, input_tensor_1, input_1,
                                        input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeBroadcastSubOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeBroadcastMultOpForward_V4(cnmlBaseOp_t op,
                                                  cnmlTensor_t input_tensor_1, void* input_1,
                                                  cnmlTensor_t input_tensor_2, void* input_2,
                                                  cnmlTensor_t output_tensor, void* output,
                                                  cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = runBinary(op, BinaryOp::kMult, true, input_tensor_1, input_1,
                                        input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeBroadcastMultOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeMlpOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor, void* input,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kMlp}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeMlpOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeSoftmaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                            void* input, cnmlTensor_t output_tensor,
                                            void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kSoftmax}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeSoftmaxOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeBatchDotOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor_1,
                                             void* input_1, cnmlTensor_t input_tensor_2,
                                             void* input_2, cnmlTensor_t output_tensor,
                                             void* output, cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run2(op, {OpKind::kBatchDot}, input_tensor_1, input_1,
                                   input_tensor_2, input_2, output_tensor, output, queue, extra);
  return logged(status, "cnmlComputeBatchDotOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1).handle(input_tensor_2)
        .buffer(input_2, input_tensor_2).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeNdSoftmaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                          void* input, cnmlTensor_t output_tensor, void* output,
                                          cnrtQueue_t queue, void* extra) {
  return logged1(run1(op, {OpKind::kSoftmax}, input_tensor, input, output_tensor, output, queue, extra),
                 "cnmlComputeNdSoftmaxOpForward_V4", op, input_tensor, input, output_tensor,
                 output, extra);
}

cnmlStatus_t cnmlComputeNdLayerNormOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                            void* input, cnmlTensor_t output_tensor, void* output,
                                            cnrtQueue_t queue, void* extra) {
  return logged1(
      run1(op, {OpKind::kLayerNorm}, input_tensor, input, output_tensor, output, queue, extra),
                 "cnmlComputeNdLayerNormOpForward_V4", op, input_tensor, input, output_tensor,
                 output, extra);
}

// Sqrt, Rsqrt, Power, Erf and Gelu: one kUnary op kind, each forward runs its own ops only.
#define PZ_UNARY_FORWARD(sdk_op, ...)                                                        \
  cnmlStatus_t cnmlCompute##sdk_op##OpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,  \
                                                 void* input, cnmlTensor_t output_tensor,     \
                                                 void* output, cnrtQueue_t queue,             \
                                                 void* extra) {                               \
    return logged1(runUnary(op, {__VA_ARGS__}, input_tensor, input, output_tensor, output,    \
                            queue, extra),                                                           \
                   "cnmlCompute" #sdk_op "OpForward_V4", op, input_tensor, input,             \
                   output_tensor, output, extra);                                             \
  }

PZ_UNARY_FORWARD(Sqrt, UnaryFn::kSqrt)
PZ_UNARY_FORWARD(Rsqrt, UnaryFn::kRsqrt)
PZ_UNARY_FORWARD(Power, UnaryFn::kPower)
PZ_UNARY_FORWARD(Erf, UnaryFn::kErf)
PZ_UNARY_FORWARD(Gelu, UnaryFn::kGelu, UnaryFn::kGeluTanh)
PZ_UNARY_FORWARD(Exp, UnaryFn::kExp)
PZ_UNARY_FORWARD(Log, UnaryFn::kLog)
PZ_UNARY_FORWARD(Abs, UnaryFn::kAbs)
PZ_UNARY_FORWARD(Neg, UnaryFn::kNeg)
PZ_UNARY_FORWARD(Not, UnaryFn::kNot)
PZ_UNARY_FORWARD(Sin, UnaryFn::kSin)
PZ_UNARY_FORWARD(Cos, UnaryFn::kCos)
PZ_UNARY_FORWARD(Clip, UnaryFn::kClip)

#undef PZ_UNARY_FORWARD

cnmlStatus_t cnmlComputeNdLogSoftmaxOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                 void* input, cnmlTensor_t output_tensor,
                                                 void* output, cnrtQueue_t queue, void* extra) {
  return logged1(
      run1(op, {OpKind::kLogSoftmax}, input_tensor, input, output_tensor, output, queue, extra),
      "cnmlComputeNdLogSoftmaxOpForward_V4", op, input_tensor, input, output_tensor, output,
      extra);
}

// The reductions: one kReduce op kind, each forward runs its own ops only.
#define PZ_REDUCE_FORWARD(sdk_op, fn)                                                        \
  cnmlStatus_t cnmlCompute##sdk_op##OpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,  \
                                                 void* input, cnmlTensor_t output_tensor,     \
                                                 void* output, cnrtQueue_t queue,             \
                                                 void* extra) {                               \
    const cnmlStatus_t status =                                                               \
        op && op->desc.kind == OpKind::kReduce && op->desc.reduce != fn                       \
            ? CNML_STATUS_INVALIDPARAM                                                        \
            : run1(op, {OpKind::kReduce}, input_tensor, input, output_tensor, output, queue, extra); \
    return logged1(status, "cnmlCompute" #sdk_op "OpForward_V4", op, input_tensor, input,     \
                   output_tensor, output, extra);                                             \
  }

PZ_REDUCE_FORWARD(NdReduceSum, ReduceFn::kSum)
PZ_REDUCE_FORWARD(NdReduceMean, ReduceFn::kMean)
PZ_REDUCE_FORWARD(NdReduceMax, ReduceFn::kMax)
PZ_REDUCE_FORWARD(NdReduceMin, ReduceFn::kMin)
PZ_REDUCE_FORWARD(NdReduceProd, ReduceFn::kProd)

#undef PZ_REDUCE_FORWARD

// Pow, the comparisons and the logic ops, each form (element-wise or broadcast) its own.
#define PZ_BINARY_FORWARD(sdk_op, which, broadcast)                                          \
  cnmlStatus_t cnmlCompute##sdk_op##OpForward_V4(                                            \
      cnmlBaseOp_t op, cnmlTensor_t input_tensor_1, void* input_1,                           \
      cnmlTensor_t input_tensor_2, void* input_2, cnmlTensor_t output_tensor, void* output,  \
      cnrtQueue_t queue, void* extra) {                                                      \
    const cnmlStatus_t status = runBinary(op, which, broadcast, input_tensor_1,              \
                                          input_1, input_tensor_2, input_2, output_tensor,   \
                                          output, queue, extra);                                    \
    return logged(status, "cnmlCompute" #sdk_op "OpForward_V4", [&](Call& c) {               \
      c.handle(op).handle(input_tensor_1).buffer(input_1, input_tensor_1)                    \
          .handle(input_tensor_2).buffer(input_2, input_tensor_2).handle(output_tensor)      \
          .buffer(output, output_tensor).queue().invoke(extra);                              \
    });                                                                                      \
  }

PZ_BINARY_FORWARD(Pow, BinaryOp::kPow, false)
PZ_BINARY_FORWARD(BroadcastPow, BinaryOp::kPow, true)
PZ_BINARY_FORWARD(Equal, BinaryOp::kEqual, false)
PZ_BINARY_FORWARD(CycleEqual, BinaryOp::kEqual, true)
PZ_BINARY_FORWARD(NEqual, BinaryOp::kNotEqual, false)
PZ_BINARY_FORWARD(CycleNEqual, BinaryOp::kNotEqual, true)
PZ_BINARY_FORWARD(Less, BinaryOp::kLess, false)
PZ_BINARY_FORWARD(CycleLess, BinaryOp::kLess, true)
PZ_BINARY_FORWARD(LessEqual, BinaryOp::kLessEqual, false)
PZ_BINARY_FORWARD(CycleLessEqual, BinaryOp::kLessEqual, true)
PZ_BINARY_FORWARD(Greater, BinaryOp::kGreater, false)
PZ_BINARY_FORWARD(CycleGreater, BinaryOp::kGreater, true)
PZ_BINARY_FORWARD(GreaterEqual, BinaryOp::kGreaterEqual, false)
PZ_BINARY_FORWARD(CycleGreaterEqual, BinaryOp::kGreaterEqual, true)
PZ_BINARY_FORWARD(And, BinaryOp::kAnd, false)
PZ_BINARY_FORWARD(CycleAnd, BinaryOp::kAnd, true)
PZ_BINARY_FORWARD(Or, BinaryOp::kOr, false)
PZ_BINARY_FORWARD(CycleOr, BinaryOp::kOr, true)
PZ_BINARY_FORWARD(Xor, BinaryOp::kXor, false)
PZ_BINARY_FORWARD(CycleXor, BinaryOp::kXor, true)

#undef PZ_BINARY_FORWARD

cnmlStatus_t cnmlComputeConcatOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensors[],
                                           void* inputs[], int input_num,
                                           cnmlTensor_t output_tensors[], void* outputs[],
                                           int output_num, cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run(op, {OpKind::kConcat}, input_tensors, inputs, input_num,
                                  output_tensors, outputs, output_num, queue, extra);
  return logged(status, "cnmlComputeConcatOpForward_V4", [&](Call& c) {
    c.handle(op).tensors("inputs", input_tensors, input_num)
        .buffers("in_data", inputs, input_tensors, input_num).value(input_num)
        .tensors("outputs", output_tensors, output_num)
        .buffers("out_data", outputs, output_tensors, output_num).value(output_num).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlComputeRnnOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensors[],
                                        void* inputs[], int input_num,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra) {
  const cnmlStatus_t status = run(op, {OpKind::kRnn}, input_tensors, inputs, input_num,
                                  &output_tensor, &output, 1, queue, extra);
  return logged(status, "cnmlComputeRnnOpForward_V4", [&](Call& c) {
    c.handle(op).tensors("inputs", input_tensors, input_num)
        .buffers("in_data", inputs, input_tensors, input_num).value(input_num)
        .handle(output_tensor).buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeLrnOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor, void* input,
                                        cnmlTensor_t output_tensor, void* output,
                                        cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kLrn}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeLrnOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeReshapeOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                            void* input, cnmlTensor_t output_tensor,
                                            void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kReshape}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeReshapeOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeTransposeProOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                 void* input, cnmlTensor_t output_tensor,
                                                 void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kTranspose}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeTransposeProOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputePreluOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                          void* input, cnmlTensor_t output_tensor, void* output,
                                          cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kPrelu}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputePreluOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeNdStridedSliceOpForward_V2(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                                   void* input, cnmlTensor_t output_tensor,
                                                   void* output, cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kSlice}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeNdStridedSliceOpForward_V2", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
  });
}

cnmlStatus_t cnmlComputeCastOpForward_V4(cnmlBaseOp_t op, cnmlTensor_t input_tensor,
                                         void* input, cnmlTensor_t output_tensor, void* output,
                                         cnrtQueue_t queue, void* extra) {
  return logged(run1(op, {OpKind::kCast}, input_tensor, input, output_tensor, output, queue, extra),
                "cnmlComputeCastOpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).buffer(input, input_tensor).handle(output_tensor)
        .buffer(output, output_tensor).queue().invoke(extra);
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
    status = run1(op, {OpKind::kGatherV2}, index_tensor, index, output_tensor, output, queue, extra);
  }
  return logged(status, "cnmlComputeGatherV2OpForward_V4", [&](Call& c) {
    c.handle(op).handle(input_tensor).opaque(input).handle(index_tensor)
        .buffer(index, index_tensor).handle(output_tensor).buffer(output, output_tensor).queue()
        .invoke(extra);
  });
}

}  // extern "C"
