// Element-wise heads: eltwise (activations, unary functions, gates), binary (Add, the
// Binary family, batchnorm/scale), PReLU, and the row-wise softmax and layer norm.
#include "heads.h"

namespace pz_sdk {
namespace onednn {

// `gate`: the head starts a gate (gateAt), whose Mul reads the head's input again (a chain
// input the primitive does not need).
std::unique_ptr<DnnlOp> makeEltwise(const OpDesc& d, const PostOps& post, int threads,
                                    bool cl, const Eltwise* gate) {
  float alpha = gate ? gate->alpha : 1.0f, beta = gate ? gate->beta : 0.0f;
  dnnl::algorithm alg = gate ? gate->alg : dnnl::algorithm::eltwise_linear;
  const bool ok = gate || (d.kind == OpKind::kActive ? eltwiseOf(d.active, &alg, &alpha, &beta)
                                                     : unaryOf(d, &alg, &alpha, &beta));
  if (!ok) return nullptr;
  const memory::desc user = plain(d.inputs[0].dims), md = act(d.inputs[0].dims, cl);
  const dnnl::eltwise_forward::primitive_desc pd(cpuEngine(),
                                                 dnnl::prop_kind::forward_inference, alg, md,
                                                 md, alpha, beta, attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::eltwise_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, user, md);
  if (gate) op->addUnbound(user);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, user, md);
  return op;
}

// Add, the Binary family, and batchnorm/scale (the first affine step as the primitive, the
// second as a post-op ahead of the chain's).
std::unique_ptr<DnnlOp> makeBinary(const OpDesc& d, const PostOps& post, int threads,
                                   bool cl) {
  const Dims& out = d.outputs[0].dims;
  // A broadcast operand stays row-major: oneDNN broadcasts by dims, whatever the layouts.
  auto operand = [&](const Dims& dims) {
    return dims == out ? act(dims, cl) : plain(dims, out.size());
  };
  const memory::desc src0 = operand(d.inputs[0].dims), dst = act(out, cl);
  auto op = std::make_unique<DnnlOp>(threads);
  if (d.kind == OpKind::kAdd || d.kind == OpKind::kBinary) {
    const memory::desc src1 = operand(d.inputs[1].dims);
    const dnnl::algorithm alg =
        d.kind == OpKind::kAdd ? dnnl::algorithm::binary_add : binaryAlg(d.binary);
    const dnnl::binary::primitive_desc pd(cpuEngine(), alg, src0, src1, dst, attrOf(post));
    op->prim_ = dnnl::binary(pd);
    op->addPort(true, DNNL_ARG_SRC_0, plain(d.inputs[0].dims, out.size()), src0);
    op->addPort(true, DNNL_ARG_SRC_1, plain(d.inputs[1].dims, out.size()), src1);
    bindPostOps(*op, post);
    op->addPort(false, DNNL_ARG_DST, plain(out), dst);
    return op;
  }
  if (out.size() < 2) return nullptr;
  const std::vector<AffineStep> steps = affineSteps(d);
  PostOps all;
  const memory::desc c0 = channelDesc(steps[0].operand->data.size(), out.size());
  if (steps.size() > 1) {
    const memory::desc c1 = channelDesc(steps[1].operand->data.size(), out.size());
    all.operands.push_back({0, c1, &steps[1].operand->data, c1});
    all.ops.append_binary(steps[1].alg, c1);
  }
  const int shift = all.ops.len();
  for (int i = 0; i < post.ops.len(); ++i) {  // the chain's post-ops after the second step
    const dnnl::primitive::kind kind = post.ops.kind(i);
    if (kind == dnnl::primitive::kind::eltwise) {
      dnnl::algorithm alg;
      float alpha, beta;
      post.ops.get_params_eltwise(i, alg, alpha, beta);
      all.ops.append_eltwise(alg, alpha, beta);
    } else {
      dnnl::algorithm alg;
      memory::desc md;
      post.ops.get_params_binary(i, alg, md);
      all.ops.append_binary(alg, md);
    }
  }
  for (const PostOps::Operand& o : post.operands)
    all.operands.push_back({o.index + shift, o.md, o.data, o.user});
  const dnnl::binary::primitive_desc pd(cpuEngine(), steps[0].alg, src0, c0, dst, attrOf(all));
  op->prim_ = dnnl::binary(pd);
  op->addPort(true, DNNL_ARG_SRC_0, plain(d.inputs[0].dims), src0);
  op->addConst(DNNL_ARG_SRC_1, c0, steps[0].operand->data, c0);
  bindPostOps(*op, all);
  op->addPort(false, DNNL_ARG_DST, plain(out), dst);
  return op;
}

std::unique_ptr<DnnlOp> makePrelu(const OpDesc& d, int threads) {
  const Dims& in = d.inputs[0].dims;
  if (in.size() < 2) return nullptr;
  const memory::desc md = plain(in);
  const memory::desc w = channelDesc(d.consts[0]->data.size(), in.size());
  const dnnl::prelu_forward::primitive_desc pd(cpuEngine(), dnnl::prop_kind::forward_inference,
                                               md, w, md);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::prelu_forward(pd);
  op->addInput(DNNL_ARG_SRC, md);
  op->addConst(DNNL_ARG_WEIGHTS, w, d.consts[0]->data, w);
  op->addOutput(DNNL_ARG_DST, md);
  return op;
}

std::unique_ptr<DnnlOp> makeSoftmax(const OpDesc& d, int threads) {
  const memory::desc md = plain(d.inputs[0].dims);
  const dnnl::softmax_forward::primitive_desc pd(cpuEngine(),
                                                 dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::softmax_accurate, md, md,
                                                 d.axis);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::softmax_forward(pd);
  op->addInput(DNNL_ARG_SRC, md);
  op->addOutput(DNNL_ARG_DST, md);
  return op;
}

// Normalised over the axes from `axis` on: a 2-D [outer, len] view, as oneDNN normalises
// over the last axis.
std::unique_ptr<DnnlOp> makeLayerNorm(const OpDesc& d, int threads) {
  const Dims& in = d.inputs[0].dims;
  const memory::dim len =
      static_cast<memory::dim>(elementCount(Dims(in.begin() + d.axis, in.end())));
  const memory::dim outer = static_cast<memory::dim>(d.inputs[0].elements()) / len;
  const memory::desc md({outer, len}, DT::f32, Tag::ab), vec({len}, DT::f32, Tag::a);
  const bool shift = d.consts.size() > 1 && d.consts[1];
  dnnl::normalization_flags flags = dnnl::normalization_flags::use_scale;
  if (shift) flags = flags | dnnl::normalization_flags::use_shift;
  const dnnl::layer_normalization_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, md, md, d.eps, flags);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::layer_normalization_forward(pd);
  op->addInput(DNNL_ARG_SRC, md);
  op->addConst(DNNL_ARG_SCALE, vec, d.consts[0]->data, vec);
  if (shift) op->addConst(DNNL_ARG_SHIFT, vec, d.consts[1]->data, vec);
  op->addOutput(DNNL_ARG_DST, md);
  return op;
}

}  // namespace onednn
}  // namespace pz_sdk
