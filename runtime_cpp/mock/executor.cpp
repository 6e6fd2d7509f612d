#include "executor.h"

#include "kernels.h"
#include "numerics.h"
#include "op_cost.h"

namespace pz_mock {

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

}  // namespace

std::unique_ptr<PreparedOp> prepare(const OpDesc& desc, int threads) {
  threads = threadsForWork({&desc}, threads);
  auto op = std::make_unique<PreparedOp>();
  op->desc = compiledCopy(desc);  // later rebinding by the caller must not change a compiled op
  ownBorrowedConsts(op->desc);
  op->threads = threads;
  op->precision = precisionOf(op->desc);
  // Any precision: the backend declines what it does not compute (backend.h).
  op->backend = makeBackendOp({&op->desc}, threads);
  if (op->backend) {
    stripConstData(op->desc);  // the backend holds its own copy of the weights
    return op;
  }
  const OpKind kind = op->desc.kind;
  // Created only where the backend said it computes it (backendComputesRecurrent).
  if (kind == OpKind::kRnn) throw OpDataError{CNML_STATUS_UNSUPPORT};
  const bool int8 = op->desc.int8;
  if ((kind == OpKind::kConv || kind == OpKind::kConvGroup) && !int8) {
    prepareConv(*op);
    if (!op->depthwise) stripConstData(op->desc);  // packed filter and bias copied
  }
  if ((kind == OpKind::kConv || kind == OpKind::kConvGroup) && int8) prepareConvInt8(*op);
  if (kind == OpKind::kMlp && !int8) {
    prepareMlp(*op);
    if (!op->packed_weights.empty()) stripConstData(op->desc);  // packed filter, bias copied
  }
  if (kind == OpKind::kMlp && int8) prepareMlpInt8(*op);
  if (kind == OpKind::kDeconv || kind == OpKind::kDeconvGroup) prepareDeconv(*op);
  if (kind == OpKind::kNearestNeighbor || kind == OpKind::kInterp) prepareResize(*op);
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

// The op's arithmetic on fp32 buffers (fp32 ops directly; fp16 and int8 ops on decoded
// copies, numerics.h assumption 2).
void executeFloat(PreparedOp& op, const float* const* in, float* const* out) {
  const OpDesc& d = op.desc;
  const int t = op.threads;
  switch (d.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup:
      if (d.int8)
        convForwardInt8(op, in[0], out[0]);
      else
        convForward(op, in[0], out[0]);
      break;
    case OpKind::kMlp:
      if (d.int8)
        mlpForwardInt8(op, in[0], out[0]);
      else
        mlpForward(op, in[0], out[0]);
      break;
    case OpKind::kPool: poolForward(d, in[0], out[0], t); break;
    case OpKind::kLrn: lrnForward(d, in[0], out[0], t); break;
    case OpKind::kActive: activeForward(d.active, in[0], out[0], d.inputs[0].elements(), t); break;
    case OpKind::kBatchNorm: channelAffineForward(d, true, in[0], out[0], t); break;
    case OpKind::kScale: channelAffineForward(d, false, in[0], out[0], t); break;
    case OpKind::kAdd: addForward(in[0], in[1], out[0], d.inputs[0].elements(), t); break;
    case OpKind::kSoftmax: softmaxForward(d, in[0], out[0], t); break;
    case OpKind::kConcat: concatForward(d, in, out[0], t); break;
    case OpKind::kTranspose: transposeForward(d, in[0], out[0], t); break;
    case OpKind::kReshape: copyForward(in[0], out[0], d.inputs[0].elements(), t); break;
    case OpKind::kBinary: binaryForward(d, in[0], in[1], out[0], t); break;
    case OpKind::kSlice: sliceForward(d, in[0], out[0], t); break;
    case OpKind::kPrelu: preluForward(d, in[0], out[0], t); break;
    case OpKind::kDeconv:
    case OpKind::kDeconvGroup: deconvForward(op, in[0], out[0]); break;
    case OpKind::kNearestNeighbor: nearestForward(op, in[0], out[0]); break;
    case OpKind::kInterp: bilinearForward(op, in[0], out[0]); break;
    case OpKind::kBatchDot: batchDotForward(d, in[0], in[1], out[0], t); break;
    case OpKind::kLayerNorm: layerNormForward(d, in[0], out[0], t); break;
    case OpKind::kUnary: unaryForward(d, in[0], out[0], t); break;
    case OpKind::kLogSoftmax: logSoftmaxForward(d, in[0], out[0], t); break;
    case OpKind::kReduce: reduceForward(d, in[0], out[0], t); break;
    case OpKind::kCast: break;  // execute() handles it
    case OpKind::kHostTransfer: break;  // the host computes it; no device work
    case OpKind::kGatherV2: break;      // execute() handles it
    case OpKind::kRnn: break;           // backend only (prepare refuses it otherwise)
  }
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

}  // namespace pz_mock
