#include "executor.h"

#include "kernels.h"

namespace pz_mock {

std::unique_ptr<PreparedOp> prepare(const OpDesc& desc, int threads) {
  auto op = std::make_unique<PreparedOp>();
  op->desc = deepCopy(desc);  // later rebinding by the caller must not change a compiled op
  op->threads = threads;
  if (op->desc.kind == OpKind::kConv || op->desc.kind == OpKind::kConvGroup) prepareConv(*op);
  if (op->desc.kind == OpKind::kMlp) prepareMlp(*op);
  if (op->desc.kind == OpKind::kDeconv || op->desc.kind == OpKind::kDeconvGroup) prepareDeconv(*op);
  if (op->desc.kind == OpKind::kNearestNeighbor || op->desc.kind == OpKind::kInterp)
    prepareResize(*op);
  return op;
}

void execute(PreparedOp& op, const float* const* in, float* const* out) {
  const OpDesc& d = op.desc;
  const int t = op.threads;
  switch (d.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: convForward(op, in[0], out[0]); break;
    case OpKind::kMlp: mlpForward(op, in[0], out[0]); break;
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
  }
}

}  // namespace pz_mock
