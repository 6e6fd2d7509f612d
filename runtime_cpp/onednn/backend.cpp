// The oneDNN SDK's backend hooks (mock/backend.h): an fp32 op, or a fusion's chain of an op
// and the element-wise ops after it, becomes one oneDNN primitive with post-ops, created at
// compile and executed at forward on the op's MP threads. Ops this file does not map are
// left to the mock's kernels (README "oneDNN backend" lists them). Forwards are timed with
// the wall clock.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"
#include "heads.h"
#include "quantized.h"
#include "sparse.h"

namespace pz_mock {
namespace onednn {
namespace {

// Whether oneDNN runs `prim` on one of its reference implementations ("ref:any" and the
// like in ONEDNN_VERBOSE).
bool isReference(const dnnl::primitive& prim) {
  const char* info = nullptr;
  if (dnnl_primitive_desc_query(prim.get_primitive_desc(), dnnl_query_impl_info_str, 0,
                                &info) != dnnl_success || info == nullptr)
    return false;
  return std::string(info).find("ref") != std::string::npos;
}

// Whether a post-op reads a run-time operand of the whole output's shape.
bool wholeOperand(const PostOps& post, const Dims& out) {
  for (const PostOps::Operand& o : post.operands)
    if (!o.data && o.user.get_dims() == plain(out).get_dims()) return true;
  return false;
}

// `b.cl`: layout-agnostic heads over channels-last activations (chain inputs of the
// output's shape included); the others ignore it. `b.over`: convolutions, and binaries
// over their first source.
std::unique_ptr<DnnlOp> makeHead(const std::vector<const OpDesc*>& chain, int threads,
                                 const Build& b = {}) {
  const OpDesc& d = *chain.front();
  const bool cl = b.cl;
  const bool conv = d.kind == OpKind::kConv || d.kind == OpKind::kConvGroup;
  // In place: a convolution's residual add, or a binary over its first source (oneDNN's
  // binary may write over src0, which has the destination's dims and layout).
  const bool binary = d.kind == OpKind::kAdd || d.kind == OpKind::kBinary;
  if (b.over >= 0 && !conv && !(binary && b.over == 0 && d.inputs[0].dims == d.outputs[0].dims))
    return nullptr;
  if (movesData(d.kind)) return makeLayoutChain(chain, threads, cl);  // no post-ops
  const memory::desc out_cl = act(chain.back()->outputs[0].dims, true);
  Eltwise gate;
  const std::size_t gated = gateAt(chain, 0, &gate);
  const PostOps post = postOpsOf(chain, cl ? &out_cl : nullptr, gated ? gated : 1);
  if (gated) return makeEltwise(d, post, threads, cl, &gate);
  const bool alone = chain.size() == 1;
  switch (d.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: return makeConv(d, chain, threads, b.over);
    case OpKind::kMlp: return makeMlp(d, chain, threads);
    case OpKind::kPool:
      // oneDNN 3.2's pooling kernel in the dense NCHW layout gets a per-element binary
      // post-op wrong (a residual add read at the wrong offsets; per-channel operands and
      // eltwise post-ops are right): such a chain pools in channels last.
      if (!cl && wholeOperand(post, d.outputs[0].dims)) {
        if (d.outputs[0].dims.size() != 4) return nullptr;
        return makeHead(chain, threads, Build{true, b.over});
      }
      return makePool(d, post, threads, cl);
    case OpKind::kActive:
    case OpKind::kUnary: return makeEltwise(d, post, threads, cl);
    case OpKind::kInterp:
    case OpKind::kNearestNeighbor: return makeResample(d, post, threads, cl);
    case OpKind::kAdd:
    case OpKind::kBinary:
    case OpKind::kBatchNorm:
    case OpKind::kScale: return makeBinary(d, post, threads, cl);
    case OpKind::kSoftmax: return alone ? makeSoftmax(d, threads) : nullptr;
    case OpKind::kConcat: return alone ? makeConcat(d, threads, cl) : nullptr;
    case OpKind::kLayerNorm: return alone ? makeLayerNorm(d, threads) : nullptr;
    case OpKind::kBatchDot: return alone ? makeBatchDot(d, threads) : nullptr;
    case OpKind::kSlice: return alone ? makeSlice(d, threads, cl) : nullptr;
    case OpKind::kDeconv:
    case OpKind::kDeconvGroup: return alone ? makeDeconv(d, threads) : nullptr;
    case OpKind::kPrelu: return alone ? makePrelu(d, threads) : nullptr;
    case OpKind::kLrn: return alone ? makeLrn(d, threads) : nullptr;
    case OpKind::kRnn: return alone ? makeRnn(d, threads) : nullptr;
    default: return nullptr;  // the mock's kernels (README: oneDNN backend)
  }
}

bool isHead(OpKind kind) {
  switch (kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup:
    case OpKind::kMlp:
    case OpKind::kPool:
    case OpKind::kActive:
    case OpKind::kUnary:
    case OpKind::kAdd:
    case OpKind::kBinary:
    case OpKind::kBatchNorm:
    case OpKind::kScale:
    case OpKind::kInterp:
    case OpKind::kNearestNeighbor: return true;
    default: return false;
  }
}

// Ops whose kernels take any layout of their NCHW activations (the heads but convolution
// and inner product, and concat): inside a fusion they adopt the channels last their
// producer's convolution hands over instead of a round trip through the dense layout
// (VGG-19: 3 of its 88 ms were the reorders around its pools).
bool layoutAgnostic(const std::vector<const OpDesc*>& chain) {
  const OpDesc& d = *chain.front();
  if (movesData(d.kind)) return d.inputs[0].dims.size() == 4;  // reads any 4-D layout
  const bool weighted = d.kind == OpKind::kConv || d.kind == OpKind::kConvGroup ||
                        d.kind == OpKind::kMlp;
  return ((isHead(d.kind) && !weighted) || d.kind == OpKind::kConcat ||
          d.kind == OpKind::kSlice) &&
         d.outputs.size() == 1 && d.outputs[0].dims.size() == 4 &&
         d.inputs[0].dims.size() == 4;
}

// Replaces `op` by `re`, a rebuild of it as `b` says, keeping the links its inputs have
// (but `skip`'s); false, leaving `op` as it was, if `re` is null or cannot keep them.
bool adopt(DnnlOp& op, std::unique_ptr<DnnlOp> re, const Build& b, int skip = -1) {
  if (!re || re->ins_.size() != op.ins_.size()) return false;
  for (std::size_t j = 0; j < op.ins_.size(); ++j) {
    const Port& old = op.ins_[j];
    if (static_cast<int>(j) == skip || !old.linked) continue;
    Port& p = re->ins_[j];
    if (!p.reordered || p.inner.get_desc() != old.inner.get_desc()) return false;
  }
  for (std::size_t j = 0; j < op.ins_.size(); ++j) {
    const Port& old = op.ins_[j];
    if (static_cast<int>(j) == skip || !old.linked) continue;
    Port& p = re->ins_[j];
    p.inner = old.inner;
    p.reordered = false;
    p.linked = true;
    re->args_[p.arg] = p.inner;
  }
  re->rebuild_ = std::move(op.rebuild_);
  // Buffers the op already gave a shared port (inner_output) stay alive with it.
  for (AlignedBuffer& buffer : op.owned_) re->owned_.push_back(std::move(buffer));
  re->built_ = b;
  re->agnostic_ = op.agnostic_;
  re->ops_ = op.ops_;
  op = std::move(*re);
  return true;
}

}  // namespace
}  // namespace onednn

using namespace onednn;

std::unique_ptr<BackendOp> makeBackendOp(const std::vector<const OpDesc*>& chain, int threads) {
  for (const OpDesc* d : chain)
    if (precisionOf(*d) != Precision::kFp32 || d->kind == OpKind::kCast) {  // quantized.cpp
      FloatPath fp32;
      fp32.make = [](const std::vector<const OpDesc*>& c, int t,
                     bool cl) -> std::unique_ptr<BackendOp> {
        if (cl && !layoutAgnostic(c)) return nullptr;
        return makeHead(c, t, Build{cl});
      };
      fp32.read_input = [](BackendOp& op, int i, const memory& value) {
        auto* d = dynamic_cast<DnnlOp*>(&op);
        if (!d || i >= static_cast<int>(d->ins_.size())) return false;
        Port& p = d->ins_[i];
        if (!p.reordered || p.inner.get_desc() != value.get_desc()) return false;
        p.inner = value;
        p.reordered = false;
        p.linked = true;
        d->args_[p.arg] = value;
        return true;
      };
      fp32.inner_output = [](BackendOp& op, int o, bool skip) {
        auto* d = dynamic_cast<DnnlOp*>(&op);
        if (!d || o >= static_cast<int>(d->outs_.size()) || !d->outs_[o].reordered)
          return memory();
        if (skip) d->outs_[o].reordered = false;
        d->outs_[o].kept = true;
        d->ownBuffer(d->outs_[o].inner);  // the reader binds its address now
        return d->outs_[o].inner;
      };
      fp32.post_ops = [](const std::vector<const OpDesc*>& c, const memory::desc* full) {
        const PostOps p = postOpsOf(c, full);  // no tail: int8/fp16 heads take post-ops
        ChainPostOps out{p.ops, {}};
        for (const PostOps::Operand& o : p.operands)
          out.operands.push_back({o.index, o.md, o.data, o.user});
        return out;
      };
      return makeReducedOp(chain, threads, fp32);
    }
  // fp32 data only: non-float activations stay on the mock.
  auto f32 = [](const std::vector<Operand>& v) {
    for (const Operand& o : v)
      if (o.dtype != CNML_DATA_FLOAT32) return false;
    return true;
  };
  for (const OpDesc* d : chain)
    if (onMockOnly(*d) || precisionOf(*d) != Precision::kFp32 || !f32(d->inputs) ||
        !f32(d->outputs))
      return nullptr;
  if (std::unique_ptr<BackendOp> sparse = makeSparseOp(chain, threads)) return sparse;
  ThreadScope scope(threads);
  std::unique_ptr<DnnlOp> op;
  try {
    op = makeHead(chain, threads);
  } catch (const dnnl::error&) {
    // oneDNN has no implementation for this shape or attribute set: the mock computes.
    return nullptr;
  }
  // A chain whose post-ops send oneDNN to a reference kernel (an eltwise head with eltwise
  // post-ops on a small 2-D tensor, a broadcast binary with binary post-ops: 10-100x
  // slower than the JIT kernels) runs as separate ops instead: the fusion retries its head
  // alone, then the rest.
  if (op && chain.size() > 1 && isReference(op->prim_)) return nullptr;
  if (op) {
    op->agnostic_ = layoutAgnostic(chain);
    op->ops_ = static_cast<int>(chain.size());
    // Copies: the chain's records are the fusion's, and the links come later (before
    // settle(), while the fusion compiles); they read the weights from the caller's
    // buffers again rather than keep a plain copy of every op's beside the reordered one.
    std::vector<OpDesc> copies;
    for (const OpDesc* d : chain) copies.push_back(borrowingCopy(*d));
    op->rebuild_ = [copies = std::move(copies), threads](const Build& b)
        -> std::unique_ptr<DnnlOp> {
      std::vector<OpDesc> owned = copies;
      for (OpDesc& d : owned) ownBorrowedConsts(d);
      std::vector<const OpDesc*> ptrs;
      for (const OpDesc& d : owned) ptrs.push_back(&d);
      ThreadScope scope(threads);
      try {
        return makeHead(ptrs, threads, b);
      } catch (const dnnl::error&) {
        return nullptr;
      }
    };
  }
  return op;
}

bool backendCanAppend(const std::vector<const OpDesc*>& chain, const OpDesc& next) {
  if (sparseTakes(*chain.front())) return false;  // its post-ops run apart
  if (movesData(chain.front()->kind)) {  // one reorder, while the views compose
    if (!movesData(next.kind)) return false;
    std::vector<const OpDesc*> longer = chain;
    longer.push_back(&next);
    memory::desc src, dst;
    return layoutViews(longer, plain(chain.front()->inputs[0].dims),
                       plain(next.outputs[0].dims), &src, &dst);
  }
  if (!isHead(chain.front()->kind)) return false;
  if (chain.front()->kind == OpKind::kMlp && chain.front()->outputs[0].dims.size() != 2)
    return false;
  // A value computed inside the chain before its last op: only a gate's Mul reads one.
  for (std::size_t k = 0; k + 1 < chain.size(); ++k)
    if (inputIndex(next, chain[k]->outputs[0].id) >= 0) return endsGate(chain, next);
  return canPost(*chain.back(), next);
}

// Both sides reorder between the dense buffer and the same inner layout: the consumer reads
// the producer's inner memory instead.
bool backendLink(BackendOp& producer, int output, BackendOp& consumer, int input) {
  auto* from = dynamic_cast<DnnlOp*>(&producer);
  auto* to = dynamic_cast<DnnlOp*>(&consumer);
  if (!from || !to) return linkReduced(producer, output, consumer, input);
  const Port& out = from->outs_[output];
  if (to->agnostic_ && !to->built_.cl && out.reordered && !to->ins_[input].reordered &&
      channelsLast(out.inner.get_desc())) {
    Build b = to->built_;
    b.cl = true;
    adopt(*to, to->rebuild_(b), b);
  }
  Port& in = to->ins_[input];
  if (!out.reordered || !in.reordered || out.inner.get_desc() != in.inner.get_desc())
    return false;
  in.reordered = false;
  in.linked = true;
  in.inner = out.inner;
  to->args_[in.arg] = out.inner;
  from->outs_[output].kept = true;
  return true;
}

// The residual add of a convolution chain as a sum post-op over the residual's own buffer:
// the convolution accumulates into it instead of reading it beside a fresh destination
// (ResNet-50: 12 convolutions, each 20% slower with the add than onnxruntime's in-place
// sum); an element-wise binary (a squeeze-and-excitation scale) in place over its first
// source. The fusion calls this for the value's last reader only.
bool backendWriteOver(BackendOp& producer, int output, BackendOp& consumer, int input) {
  auto* from = dynamic_cast<DnnlOp*>(&producer);
  auto* to = dynamic_cast<DnnlOp*>(&consumer);
  if (!from || !to || !to->rebuild_ || to->built_.over >= 0 || to->outs_.size() != 1 ||
      !to->ins_[input].linked)
    return false;
  const memory shared = from->outs_[output].inner;
  Build b = to->built_;
  b.over = input;
  std::unique_ptr<DnnlOp> re = to->rebuild_(b);
  if (!re || !re->outs_[0].reordered || re->outs_[0].inner.get_desc() != shared.get_desc())
    return false;
  Port& dst = re->outs_[0];
  dst.inner = shared;
  dst.kept = true;
  re->args_[dst.arg] = shared;
  Port& in = re->ins_[input];
  in.linked = true;
  if (in.arg != kNoArg) {  // a binary's first source, read where its result goes
    in.inner = shared;
    in.reordered = false;
    re->args_[in.arg] = shared;
  }
  return adopt(*to, std::move(re), b, input);
}

bool backendSkipDense(BackendOp& producer, int output) {
  auto* from = dynamic_cast<DnnlOp*>(&producer);
  if (!from) return skipReducedDense(producer, output);
  // Linked, so reordered: its readers read the inner memory, and the dense user buffer is
  // neither written nor read.
  from->outs_[output].reordered = false;
  return true;
}

bool backendComputesRecurrent(const OpDesc& op) {
  try {
    rnnPrimitive(op);
    return true;
  } catch (const dnnl::error&) {
    return false;  // the caller substitutes cells
  }
}

bool backendTimesWallClock() { return true; }

}  // namespace pz_mock
