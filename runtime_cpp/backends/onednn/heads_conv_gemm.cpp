// Heads with a filter or a second matrix: convolution (with the batchnorm/scale after it
// folded in), deconvolution, inner product (Mlp) and batched matmul (BatchDot).
#include "heads.h"

#include <string>

namespace pz_sdk {
namespace onednn {

namespace {

// The batchnorm/scale ops right after a convolution or inner product, folded into its
// weights and bias (per output channel y = x * m + a): binary post-ops with per-channel
// operands cost a pass over the output each, and send grouped convolutions to a slow
// kernel. Rounds differently from the mock's op-by-op sums, within fp32 tolerance.
struct Folded {
  std::vector<float> weights, bias;
  std::size_t next = 1;  // the chain's first op left as a post-op
};
Folded foldAffine(const std::vector<const OpDesc*>& chain, std::size_t channels) {
  const OpDesc& head = *chain.front();
  Folded f;
  std::vector<float> m(channels, 1.0f), a(channels, 0.0f);
  auto at = [](const TensorImpl* t, std::size_t c) {
    return t ? t->data[t->data.size() == 1 ? 0 : c] : 0.0f;
  };
  Eltwise gate;
  for (; f.next < chain.size(); ++f.next) {
    const OpDesc& d = *chain[f.next];
    if (gateAt(chain, f.next, &gate)) break;  // the gate reads the value before it
    if ((d.kind != OpKind::kBatchNorm && d.kind != OpKind::kScale) ||
        d.outputs[0].dims.size() < 2 || d.outputs[0].dims[1] != static_cast<int>(channels))
      break;
    const TensorImpl* c0 = d.consts[0].get();
    const TensorImpl* c1 = d.consts.size() > 1 ? d.consts[1].get() : nullptr;
    for (std::size_t c = 0; c < channels; ++c) {
      const float u = at(c0, c), v = at(c1, c);
      if (d.kind == OpKind::kBatchNorm) {  // (x - u) * v
        m[c] *= v;
        a[c] = (a[c] - u) * v;
      } else {  // x * u + v
        m[c] *= u;
        a[c] = a[c] * u + v;
      }
    }
  }
  if (f.next == 1) return f;
  f.weights = head.consts[0]->data;
  const std::size_t per = f.weights.size() / channels;
  const bool bias = head.consts.size() > 1 && head.consts[1];
  f.bias.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t j = 0; j < per; ++j) f.weights[c * per + j] *= m[c];
    f.bias[c] = (bias ? head.consts[1]->data[c] : 0.0f) * m[c] + a[c];
  }
  return f;
}

// oneDNN's reference and gemm kernels apply binary post-ops element by element: a chain that
// lands there runs faster as separate steps.
bool slowWithPostOps(const std::string& impl, const PostOps& post) {
  return !post.operands.empty() &&
         (impl.find("ref") != std::string::npos || impl.find("gemm:") != std::string::npos);
}

constexpr memory::dim kInPlaceFilterBytes = memory::dim{64} << 20;

// A [batch..., rows, cols] operand stored transposed or not, batch axes padded to `rank`.
memory::desc matrixDesc(const Dims& dims, std::size_t rank, bool transposed) {
  memory::dims d(rank - dims.size(), 1);
  d.insert(d.end(), dims.begin(), dims.end());
  memory::dims strides(rank);
  memory::dim step = d[rank - 1] * d[rank - 2];
  strides[rank - 1] = transposed ? d[rank - 2] : 1;
  strides[rank - 2] = transposed ? 1 : d[rank - 1];
  for (std::size_t i = rank - 2; i-- > 0;) {
    strides[i] = step;
    step *= d[i];
  }
  if (transposed) std::swap(d[rank - 1], d[rank - 2]);
  return memory::desc(d, DT::f32, strides);
}

}  // namespace

// `over`: the chain input (op input index) whose residual add accumulates in place.
std::unique_ptr<DnnlOp> makeConv(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                 int threads, int over) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;
  if (in.size() != 4 || f.size() != 4) return nullptr;
  const int g = d.group;
  const memory::desc user_src = plain(in), user_dst = plain(out);
  const memory::dims w_dims = g == 1 ? memory::dims{f[0], f[1], f[2], f[3]}
                                     : memory::dims{g, f[0] / g, f[1], f[2], f[3]};
  const memory::desc user_w(w_dims, DT::f32, g == 1 ? Tag::oihw : Tag::goihw);
  const Folded fold = foldAffine(chain, static_cast<std::size_t>(out[1]));
  const bool folded = fold.next > 1;
  const bool bias = folded || (d.consts.size() > 1 && d.consts[1]);
  const memory::desc bias_md({out[1]}, DT::f32, Tag::a);
  const ConvParams& c = d.conv;
  Tag act = Tag::any;  // the activations' layout
  auto any = [&act](const memory::desc& md) { return memory::desc(md.get_dims(), DT::f32, act); };
  auto convPd = [&](const memory::desc& dst, const PostOps& p) {
    return dnnl::convolution_forward::primitive_desc(
        cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        any(user_src), memory::desc(w_dims, DT::f32, Tag::any),
        bias ? bias_md : memory::desc(), dst, {c.sh, c.sw}, {c.dh - 1, c.dw - 1},
        {c.pt, c.pl}, {c.pb, c.pr}, attrOf(p));
  };
  // A residual input in the dense layout sends oneDNN to its reference kernel: it gets the
  // layout the convolution picks without post-ops, reordered at forward.
  dnnl::convolution_forward::primitive_desc probe = convPd(any(user_dst), PostOps());
  const std::string chosen = probe.impl_info_str();
  if (chosen.find("gemm") != std::string::npos || chosen.find("ref") != std::string::npos) {
    // Left to choose, oneDNN keeps a grouped convolution whose groups are not a multiple of
    // the vector width in the dense layout, on its im2col GEMM (10x slower here): channels
    // last has a direct kernel.
    act = Tag::acdb;
    try {
      probe = convPd(any(user_dst), PostOps());
    } catch (const dnnl::error&) {
      act = Tag::any;
    }
  } else if (!channelsLast(probe.dst_desc()) && probe.dst_desc() != plain(out)) {
    // A blocked layout (the image-facing convolution's nChw16c here) between convolutions
    // that chose channels last costs two reorders and a pooling in the dense layout: take
    // channels last when the same kernel runs it (ResNet-50's stem: 0.51 -> 0.47 ms).
    act = Tag::acdb;
    try {
      dnnl::convolution_forward::primitive_desc cl = convPd(any(user_dst), PostOps());
      if (cl.impl_info_str() == chosen) probe = cl; else act = Tag::any;
    } catch (const dnnl::error&) {
      act = Tag::any;
    }
  }
  const memory::desc layout = probe.dst_desc();
  if (over == 0) return nullptr;  // the convolution's own source
  const PostOps post = postOpsOf(chain, &layout, fold.next, over - 1, true);
  const dnnl::convolution_forward::primitive_desc pd =
      convPd(post.operands.empty() ? any(user_dst) : layout, post);
  if (slowWithPostOps(pd.impl_info_str(), post)) return nullptr;
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::convolution_forward(pd);
  op->swish_tail_ = post.swish_tail;
  op->addPort(true, DNNL_ARG_SRC, user_src, pd.src_desc());
  op->addConst(DNNL_ARG_WEIGHTS, user_w, folded ? fold.weights : d.consts[0]->data,
               pd.weights_desc());
  if (bias) op->addConst(DNNL_ARG_BIAS, bias_md, folded ? fold.bias : d.consts[1]->data, bias_md);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, user_dst, pd.dst_desc());
  return op;
}

std::unique_ptr<DnnlOp> makeMlp(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                int threads) {
  const memory::dim n = d.inputs[0].dims[0];
  const memory::dim k = static_cast<memory::dim>(d.inputs[0].elements()) / n;
  const memory::dim co = d.consts[0]->dims[0];
  if (d.outputs[0].dims.size() != 2 && chain.size() > 1) return nullptr;
  const Folded fold = foldAffine(chain, static_cast<std::size_t>(co));
  const bool folded = fold.next > 1;
  const PostOps post = postOpsOf(chain, nullptr, fold.next);
  const memory::desc src({n, k}, DT::f32, Tag::ab), dst({n, co}, DT::f32, Tag::ab);
  const memory::desc user_w({co, k}, DT::f32, Tag::oi), bias_md({co}, DT::f32, Tag::a);
  const bool bias = folded || (d.consts.size() > 1 && d.consts[1]);
  // A filter this large is read in place, in its plain layout: a reordered copy would hold
  // it twice while the op builds (VGG's fc6: 411 MB), and at batch 1 a product this large
  // is bound by memory bandwidth in either layout (oneDNN's gemm against its brgemm on 2
  // cores: VGG's and AlexNet's fc6 10-15% faster plain, their 64-MB fc7 about 10% slower).
  const bool in_place = !folded && n == 1 && co * k * 4 >= kInPlaceFilterBytes;
  const dnnl::inner_product_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, src,
      in_place ? user_w : memory::desc({co, k}, DT::f32, Tag::any),
      bias ? bias_md : memory::desc(), dst, attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::inner_product_forward(pd);
  op->addInput(DNNL_ARG_SRC, src);
  if (in_place)
    op->addConstInPlace(DNNL_ARG_WEIGHTS, user_w, d.consts[0]);
  else
    op->addConst(DNNL_ARG_WEIGHTS, user_w, folded ? fold.weights : d.consts[0]->data,
                 pd.weights_desc());
  if (bias) op->addConst(DNNL_ARG_BIAS, bias_md, folded ? fold.bias : d.consts[1]->data, bias_md);
  bindPostOps(*op, post);
  op->addOutput(DNNL_ARG_DST, dst);
  return op;
}

// Deconv/DeconvGroup as oneDNN's deconvolution: the crops are its paddings, ONNX's output
// padding takes rows off the bottom crop (more than the crop would add rows past the full
// output, which hold the bias only: those stay on the mock's kernels).
std::unique_ptr<DnnlOp> makeDeconv(const OpDesc& d, int threads) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;  // [ci, co / group, kh, kw]
  const DeconvParams& p = d.deconv;
  const int pad_b = p.hd - p.oph, pad_r = p.wr - p.opw;
  if (in.size() != 4 || f.size() != 4 || pad_b < 0 || pad_r < 0) return nullptr;
  const int g = d.group;
  const memory::dims w_dims = g == 1 ? memory::dims{f[1], f[0], f[2], f[3]}
                                     : memory::dims{g, f[1], f[0] / g, f[2], f[3]};
  const memory::desc user_w(w_dims, DT::f32, g == 1 ? Tag::iohw : Tag::giohw);
  const bool bias = d.consts.size() > 1 && d.consts[1];
  const memory::desc bias_md({out[1]}, DT::f32, Tag::a);
  auto any = [](const Dims& dims) { return memory::desc(plain(dims).get_dims(), DT::f32, Tag::any); };
  const dnnl::deconvolution_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
      any(in), memory::desc(w_dims, DT::f32, Tag::any), bias ? bias_md : memory::desc(),
      any(out), {p.sh, p.sw}, {p.dh - 1, p.dw - 1}, {p.hu, p.wl}, {pad_b, pad_r});
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::deconvolution_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, plain(in), pd.src_desc());
  op->addConst(DNNL_ARG_WEIGHTS, user_w, d.consts[0]->data, pd.weights_desc());
  if (bias) op->addConst(DNNL_ARG_BIAS, bias_md, d.consts[1]->data, bias_md);
  op->addPort(false, DNNL_ARG_DST, plain(out), pd.dst_desc());
  return op;
}

std::unique_ptr<DnnlOp> makeBatchDot(const OpDesc& d, int threads) {
  const Dims& out = d.outputs[0].dims;
  const std::size_t rank = out.size();
  if (rank < 2) return nullptr;
  // The stored dims are the transposed operand's; matrixDesc swaps the logical ones.
  const memory::desc a = matrixDesc(d.inputs[0].dims, rank, d.trans_a);
  const memory::desc b = matrixDesc(d.inputs[1].dims, rank, d.trans_b);
  const memory::desc dst = plain(out);
  const dnnl::matmul::primitive_desc pd(cpuEngine(), a, b, dst);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::matmul(pd);
  op->addInput(DNNL_ARG_SRC, a);
  op->addInput(DNNL_ARG_WEIGHTS, b);
  op->addOutput(DNNL_ARG_DST, dst);
  return op;
}

}  // namespace onednn
}  // namespace pz_sdk
