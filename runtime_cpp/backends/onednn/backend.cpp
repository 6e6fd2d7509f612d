// The oneDNN SDK's backend hooks (sdk/core/compute_backend.h): an fp32 op, or a fusion's
// chain of an op and the element-wise ops after it, becomes one oneDNN primitive with
// post-ops, created at compile and executed at forward on the op's MP threads. Ops this file
// does not map are left to the mock's kernels (docs/onednn.md lists them). Forwards are
// timed with the wall clock.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/compute_backend.h"
#include "heads.h"
#include "quantized.h"
#include "sparse.h"

namespace pz_sdk {
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

using Chain = std::vector<const OpDesc*>;

// `b.cl`: layout-agnostic heads over channels-last activations (chain inputs of the
// output's shape included); the others ignore it. `b.over`: the chain input the output
// overwrites (HeadKind::over).
std::unique_ptr<DnnlOp> makeHead(const Chain& chain, int threads, const Build& b = {});

// What the fp32 path does with an op kind at the head of a chain, in one place (headKind).
struct HeadKind {
  // The head's DnnlOp from the chain and its post-ops; null: the mock's kernels compute.
  using Make = std::unique_ptr<DnnlOp> (*)(const Chain& chain, const PostOps& post,
                                           int threads, const Build& b);
  // What a chain may append after the head: nothing, the ops post-ops compute
  // (backendCanAppend, canPost), or more reshapes and transposes (one reorder).
  enum Follows { kNothing, kPostOps, kLayoutOps };
  // Which chain input the output may overwrite (Build::over): none; a residual add's (as a
  // sum post-op); the first source, of the destination's dims and layout (oneDNN's binary
  // may write over src0).
  enum Over { kNoInput, kResidual, kFirstSource };

  Make make = nullptr;
  Follows follows = kNothing;
  // Its kernels take any layout of its NCHW activations: inside a fusion it adopts the
  // channels last its producer's convolution hands over instead of a round trip through
  // the dense layout (VGG-19: 3 of its 88 ms were the reorders around its pools).
  bool agnostic = false;
  Over over = kNoInput;
};

// A head that computes only alone (no post-ops), from its op.
template <std::unique_ptr<DnnlOp> (*F)(const OpDesc&, int)>
std::unique_ptr<DnnlOp> alone(const Chain& chain, const PostOps&, int threads, const Build&) {
  return chain.size() == 1 ? F(*chain.front(), threads) : nullptr;
}
template <std::unique_ptr<DnnlOp> (*F)(const OpDesc&, int, bool)>
std::unique_ptr<DnnlOp> aloneAnyLayout(const Chain& chain, const PostOps&, int threads,
                                       const Build& b) {
  return chain.size() == 1 ? F(*chain.front(), threads, b.cl) : nullptr;
}
// A head whose primitive takes the chain's post-ops.
template <std::unique_ptr<DnnlOp> (*F)(const OpDesc&, const PostOps&, int, bool)>
std::unique_ptr<DnnlOp> withPostOps(const Chain& chain, const PostOps& post, int threads,
                                    const Build& b) {
  return F(*chain.front(), post, threads, b.cl);
}

std::unique_ptr<DnnlOp> eltwiseHead(const Chain& chain, const PostOps& post, int threads,
                                    const Build& b) {
  return makeEltwise(*chain.front(), post, threads, b.cl);
}

std::unique_ptr<DnnlOp> convHead(const Chain& chain, const PostOps&, int threads,
                                 const Build& b) {
  return makeConv(*chain.front(), chain, threads, b.over);
}

std::unique_ptr<DnnlOp> mlpHead(const Chain& chain, const PostOps&, int threads, const Build&) {
  return makeMlp(*chain.front(), chain, threads);
}

// oneDNN 3.2's pooling kernel in the dense NCHW layout gets a per-element binary post-op
// wrong (a residual add read at the wrong offsets; per-channel operands and eltwise
// post-ops are right): such a chain pools in channels last.
std::unique_ptr<DnnlOp> poolHead(const Chain& chain, const PostOps& post, int threads,
                                 const Build& b) {
  const OpDesc& d = *chain.front();
  if (!b.cl && wholeOperand(post, d.outputs[0].dims)) {
    if (d.outputs[0].dims.size() != 4) return nullptr;
    return makeHead(chain, threads, Build{true, b.over});
  }
  return makePool(d, post, threads, b.cl);
}

std::unique_ptr<DnnlOp> layoutHead(const Chain& chain, const PostOps&, int threads,
                                   const Build& b) {
  return makeLayoutChain(chain, threads, b.cl);
}

// Kinds left out compute on the mock's kernels (docs/onednn.md).
HeadKind headKind(OpKind kind) {
  using K = HeadKind;
  switch (kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: return {convHead, K::kPostOps, false, K::kResidual};
    case OpKind::kMlp: return {mlpHead, K::kPostOps};
    case OpKind::kPool: return {poolHead, K::kPostOps, true};
    case OpKind::kActive:
    case OpKind::kUnary: return {eltwiseHead, K::kPostOps, true};
    case OpKind::kInterp:
    case OpKind::kNearestNeighbor: return {withPostOps<makeResample>, K::kPostOps, true};
    case OpKind::kAdd:
    case OpKind::kBinary: return {withPostOps<makeBinary>, K::kPostOps, true, K::kFirstSource};
    case OpKind::kBatchNorm:
    case OpKind::kScale: return {withPostOps<makeBinary>, K::kPostOps, true};
    case OpKind::kReshape:
    case OpKind::kTranspose: return {layoutHead, K::kLayoutOps};
    case OpKind::kSoftmax: return {alone<makeSoftmax>};
    case OpKind::kConcat: return {aloneAnyLayout<makeConcat>, K::kNothing, true};
    case OpKind::kLayerNorm: return {alone<makeLayerNorm>};
    case OpKind::kBatchDot: return {alone<makeBatchDot>};
    case OpKind::kSlice: return {aloneAnyLayout<makeSlice>, K::kNothing, true};
    case OpKind::kDeconv:
    case OpKind::kDeconvGroup: return {alone<makeDeconv>};
    case OpKind::kPrelu: return {alone<makePrelu>};
    case OpKind::kLrn: return {alone<makeLrn>};
    case OpKind::kRnn: return {alone<makeRnn>};
    default: return {};
  }
}

std::unique_ptr<DnnlOp> makeHead(const Chain& chain, int threads, const Build& b) {
  const OpDesc& d = *chain.front();
  const HeadKind kind = headKind(d.kind);
  const bool over_first = kind.over == HeadKind::kFirstSource && b.over == 0 &&
                          d.inputs[0].dims == d.outputs[0].dims;
  if (b.over >= 0 && kind.over != HeadKind::kResidual && !over_first) return nullptr;
  if (kind.follows == HeadKind::kLayoutOps) return kind.make(chain, PostOps(), threads, b);
  const memory::desc out_cl = act(chain.back()->outputs[0].dims, true);
  Eltwise gate;
  const std::size_t gated = gateAt(chain, 0, &gate);
  const PostOps post = postOpsOf(chain, b.cl ? &out_cl : nullptr, gated ? gated : 1);
  if (gated) return makeEltwise(d, post, threads, b.cl, &gate);
  return kind.make ? kind.make(chain, post, threads, b) : nullptr;
}

// Whether the chain's head takes the channels last a fusion's convolutions hand over
// (HeadKind::agnostic), over 4-D activations.
bool layoutAgnostic(const Chain& chain) {
  const OpDesc& d = *chain.front();
  const HeadKind kind = headKind(d.kind);
  if (kind.follows == HeadKind::kLayoutOps) return d.inputs[0].dims.size() == 4;
  return kind.agnostic && d.outputs.size() == 1 && d.outputs[0].dims.size() == 4 &&
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
  for (const OpDesc* d : chain)
    if (onMockOnly(*d) || precisionOf(*d) != Precision::kFp32 ||
        !allOf(d->inputs, CNML_DATA_FLOAT32) || !allOf(d->outputs, CNML_DATA_FLOAT32))
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
  const HeadKind::Follows follows = headKind(chain.front()->kind).follows;
  if (follows == HeadKind::kLayoutOps) {  // one reorder, while the views compose
    if (headKind(next.kind).follows != HeadKind::kLayoutOps) return false;
    std::vector<const OpDesc*> longer = chain;
    longer.push_back(&next);
    memory::desc src, dst;
    return layoutViews(longer, plain(chain.front()->inputs[0].dims),
                       plain(next.outputs[0].dims), &src, &dst);
  }
  if (follows != HeadKind::kPostOps) return false;
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

}  // namespace pz_sdk
