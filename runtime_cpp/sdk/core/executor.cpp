#include "executor.h"

#include "kernels/kernels.h"
#include "kernels/numerics.h"
#include "device_model/op_cost.h"

namespace pz_sdk {

namespace {

// Below this much work an op (or a backend's chain of ops) runs on one thread whatever its
// MP: waking a second OpenMP thread and meeting it at the closing barrier costs more than
// the op (benchmarks/per_op_floor.py: 300 small Softmax/LayerNorm/MatMul ops took 44 us
// each on oneDNN at MP 2 and 1.4 us on one thread, onnxruntime 1.6 us). The mock's kernels
// give the same bits on any thread count, so only time changes.
constexpr double kOneThreadFlops = 1 << 17;
constexpr double kOneThreadBytes = 1 << 17;

// A recurrent op meets its threads at a barrier every time step: its unit of parallel work
// is one step's [B, H] x [H, G*H] product. benchmarks/rnn_threads.py (50 steps, oneDNN,
// 2 cores): at <= 2.6e5 flops per step a second thread costs 1.15-2x, from 4e5 it saves
// 10-50% (but LSTM H=128 B=8, 1e6: 1.2x slower); the mock's kernels never see this op.
constexpr double kOneThreadStepFlops = 1 << 19;

int threadsForWork(const std::vector<const OpDesc*>& ops, int threads) {
  if (ops.size() == 1 && ops[0]->kind == OpKind::kRnn) {
    const OpDesc& op = *ops[0];
    const Dims& x = op.inputs[0].dims;
    const double batch = op.rnn.batch_first ? x[0] : x[1];
    const double step = 2.0 * batch * op.rnn.gates * op.rnn.hidden * op.rnn.hidden;
    return step < kOneThreadStepFlops ? 1 : threads;
  }
  double flops = 0.0, bytes = 0.0;
  for (const OpDesc* op : ops) {
    const LayerWork work = layerWorkOf(*op);
    flops += work.flops;
    bytes += work.input_bytes + work.output_bytes;
  }
  return flops < kOneThreadFlops && bytes < kOneThreadBytes ? 1 : threads;
}

// The prepare column of the op-kind table (op_kinds.h).
void prepareConvOp(PreparedOp& op) {
  if (op.desc.int8) {
    prepareConvInt8(op);
    return;
  }
  prepareConv(op);
  if (!op.depthwise) stripConstData(op.desc);  // packed filter and bias copied
}
void prepareMlpOp(PreparedOp& op) {
  if (op.desc.int8) {
    prepareMlpInt8(op);
    return;
  }
  prepareMlp(op);
  if (!op.packed_weights.empty()) stripConstData(op.desc);  // packed filter, bias copied
}
// Created only where the backend said it computes it (backendComputesRecurrent).
void backendOnly(PreparedOp&) { throw OpDataError{CNML_STATUS_UNSUPPORT}; }

using Prepare = void (*)(PreparedOp&);
constexpr Prepare kPrepare[] = {
#define PZ_SDK_OP_KIND_PREPARE(kind, name, prepare, kernel, work) prepare,
    PZ_SDK_OP_KINDS(PZ_SDK_OP_KIND_PREPARE)
#undef PZ_SDK_OP_KIND_PREPARE
};

}  // namespace

std::unique_ptr<PreparedOp> prepare(const OpDesc& desc, int threads) {
  threads = threadsForWork({&desc}, threads);
  auto op = std::make_unique<PreparedOp>();
  op->desc = compiledCopy(desc);  // later rebinding by the caller must not change a compiled op
  ownBorrowedConsts(op->desc);
  op->threads = threads;
  op->precision = precisionOf(op->desc);
  // Any precision: the backend declines what it does not compute (compute_backend.h).
  op->backend = makeBackendOp({&op->desc}, threads);
  if (op->backend) {
    stripConstData(op->desc);  // the backend holds its own copy of the weights
    return op;
  }
  const OpKind kind = op->desc.kind;
  if (const Prepare prepare_kind = kPrepare[static_cast<int>(kind)]) prepare_kind(*op);
  if (op->precision != Precision::kFp32 && kind != OpKind::kCast &&
      kind != OpKind::kHostTransfer && kind != OpKind::kGatherV2) {
    for (const Operand& o : op->desc.inputs) op->in32.emplace_back(o.elements());
    for (const Operand& o : op->desc.outputs) op->out32.emplace_back(o.elements());
  }
  return op;
}

std::unique_ptr<PreparedOp> prepareChain(const std::vector<const OpDesc*>& chain,
                                         int threads) {
  threads = threadsForWork(chain, threads);
  auto op = std::make_unique<PreparedOp>();
  op->desc = *chain.front();
  op->threads = threads;
  op->backend = makeBackendOp(chain, threads);
  if (!op->backend) return nullptr;
  op->desc.consts.clear();
  return op;
}

namespace {

// The kernel column of the op-kind table (op_kinds.h): the op's arithmetic on fp32 buffers
// (fp32 ops directly; fp16 and int8 ops on decoded copies, numerics.h assumption 2).
using Kernel = void (*)(PreparedOp& op, const float* const* in, float* const* out);

// Most kernels take one of a few signatures; the table names them through these adapters.
// One input and output, as the op's description says, on the op's threads:
template <auto Forward>
void withDesc(PreparedOp& op, const float* const* in, float* const* out) {
  Forward(op.desc, in[0], out[0], op.threads);
}
// Two inputs (a, b):
template <auto Forward>
void withDesc2(PreparedOp& op, const float* const* in, float* const* out) {
  Forward(op.desc, in[0], in[1], out[0], op.threads);
}
// One input, through what the prepare column built at compile (tables, packed weights):
template <auto Forward>
void withPrepared(PreparedOp& op, const float* const* in, float* const* out) {
  Forward(op, in[0], out[0]);
}
// A prepared op that computes in int8 where its description says so (conv, mlp):
template <auto Fp32, auto Int8>
void quantizableKernel(PreparedOp& op, const float* const* in, float* const* out) {
  if (op.desc.int8)
    Int8(op, in[0], out[0]);
  else
    Fp32(op, in[0], out[0]);
}
constexpr Kernel convKernel = quantizableKernel<convForward, convForwardInt8>;
constexpr Kernel mlpKernel = quantizableKernel<mlpForward, mlpForwardInt8>;

// The kernels whose arguments are their own.
void activeKernel(PreparedOp& op, const float* const* in, float* const* out) {
  activeForward(op.desc.active, in[0], out[0], op.desc.inputs[0].elements(), op.threads);
}
void batchNormKernel(PreparedOp& op, const float* const* in, float* const* out) {
  channelAffineForward(op.desc, true, in[0], out[0], op.threads);
}
void scaleKernel(PreparedOp& op, const float* const* in, float* const* out) {
  channelAffineForward(op.desc, false, in[0], out[0], op.threads);
}
void addKernel(PreparedOp& op, const float* const* in, float* const* out) {
  addForward(in[0], in[1], out[0], op.desc.inputs[0].elements(), op.threads);
}
void concatKernel(PreparedOp& op, const float* const* in, float* const* out) {
  concatForward(op.desc, in, out[0], op.threads);
}
void reshapeKernel(PreparedOp& op, const float* const* in, float* const* out) {
  copyForward(in[0], out[0], op.desc.inputs[0].elements(), op.threads);
}

constexpr Kernel kKernels[] = {
#define PZ_SDK_OP_KIND_KERNEL(kind, name, prepare, kernel, work) kernel,
    PZ_SDK_OP_KINDS(PZ_SDK_OP_KIND_KERNEL)
#undef PZ_SDK_OP_KIND_KERNEL
};

void executeFloat(PreparedOp& op, const float* const* in, float* const* out) {
  if (const Kernel kernel = kKernels[static_cast<int>(op.desc.kind)]) kernel(op, in, out);
}

// The op's scratch parts, one after another in this thread's workspace.
void placeScratch(PreparedOp& op) {
  std::size_t total = lineFloats(op.scratch.size()) + lineFloats(op.qinput.size()) +
                      lineFloats(op.qscratch.size());
  for (const Scratch& s : op.in32) total += lineFloats(s.size());
  for (const Scratch& s : op.out32) total += lineFloats(s.size());
  float* at = threadWorkspace(total);
  auto place = [&at](Scratch& s) {
    s.place(at);
    at += lineFloats(s.size());
  };
  place(op.scratch);
  for (Scratch& s : op.in32) place(s);
  for (Scratch& s : op.out32) place(s);
  place(op.qinput);
  place(op.qscratch);
}

}  // namespace

void execute(PreparedOp& op, const void* const* in, void* const* out) {
  if (op.backend) {
    op.backend->run(in, out);
    return;
  }
  placeScratch(op);
  const OpDesc& d = op.desc;
  if (d.kind == OpKind::kGatherV2) {
    gatherV2Forward(op, static_cast<const std::int32_t*>(in[0]), out[0]);
    return;
  }
  if (d.kind == OpKind::kCast) {
    const std::size_t n = d.inputs[0].elements();
    if (d.cast == CNML_CAST_FLOAT32_TO_FLOAT16)
      numerics::encodeHalf(static_cast<const float*>(in[0]), static_cast<std::uint16_t*>(out[0]),
                           n, op.threads);
    else
      numerics::decodeHalf(static_cast<const std::uint16_t*>(in[0]), static_cast<float*>(out[0]),
                           n, op.threads);
    return;
  }
  if (op.precision == Precision::kFp32) {
    std::vector<const float*> fin(d.inputs.size());
    std::vector<float*> fout(d.outputs.size());
    for (std::size_t i = 0; i < fin.size(); ++i) fin[i] = static_cast<const float*>(in[i]);
    for (std::size_t i = 0; i < fout.size(); ++i) fout[i] = static_cast<float*>(out[i]);
    executeFloat(op, fin.data(), fout.data());
    return;
  }
  // Activations are binary16: decode exactly, compute, round each output once.
  std::vector<const float*> fin(d.inputs.size());
  std::vector<float*> fout(d.outputs.size());
  for (std::size_t i = 0; i < fin.size(); ++i) {
    numerics::decodeHalf(static_cast<const std::uint16_t*>(in[i]), op.in32[i].data(),
                         d.inputs[i].elements(), op.threads);
    fin[i] = op.in32[i].data();
  }
  for (std::size_t i = 0; i < fout.size(); ++i) fout[i] = op.out32[i].data();
  executeFloat(op, fin.data(), fout.data());
  for (std::size_t i = 0; i < fout.size(); ++i)
    numerics::encodeHalf(fout[i], static_cast<std::uint16_t*>(out[i]), d.outputs[i].elements(),
                         op.threads);
}

std::string implementationOf(const PreparedOp& op) {
  if (op.backend) return op.backend->describe();
  return std::string("mock kernel ") + opKindName(op.desc.kind);
}

}  // namespace pz_sdk
