// Heads over windows of H x W: pooling (a global average in two stages), resampling
// (Resize) and cross-channel LRN.
#include "heads.h"

#include <algorithm>
#include <utility>

namespace pz_sdk {
namespace onednn {

namespace {

// One primitive from the op's input to its output (the caller's dense buffers, in the
// layouts `src` and `dst` inside), with the chain's post-ops' operands between.
std::unique_ptr<DnnlOp> srcToDst(dnnl::primitive prim, const OpDesc& d, const memory::desc& src,
                                 const memory::desc& dst, const PostOps& post, int threads) {
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = std::move(prim);
  op->addPort(true, DNNL_ARG_SRC, plain(d.inputs[0].dims), src);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, plain(d.outputs[0].dims), dst);
  return op;
}

// An average over a whole H x W plane (global average pooling, ReduceMean over H and W) in
// two pooling stages, the mean of each row and then of the row means: oneDNN sums a window
// in one float32 chain, whose error grows with its length (3,136 values: 5.5x onnxruntime's
// against float64 on offset data); two chains of H and W values err about (H + W) / (H W)
// as much. A 1-D plane [1, L] is seen as [a, L / a] with a the largest divisor of L up to
// sqrt(L) (the same bytes in either layout). Null when the window is not a whole plane or
// is short.
std::unique_ptr<DnnlOp> makeGlobalAverage(const OpDesc& d, const PostOps& post, int threads,
                                          bool cl) {
  const PoolParams& p = d.pool;
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  if (p.kh != in[2] || p.kw != in[3] || p.pt || p.pb || p.pl || p.pr || out[2] != 1 ||
      out[3] != 1 || in[2] * in[3] < 64)
    return nullptr;
  int h = in[2], w = in[3];
  if (h == 1 || w == 1) {  // a 1-D plane: rows of a divisor of its length
    const int length = h * w;
    int rows = 1;
    for (int a = 2; a * a <= length; ++a)
      if (length % a == 0) rows = a;
    if (rows < 4) return nullptr;
    h = rows;
    w = length / rows;
  }
  const auto avg = dnnl::algorithm::pooling_avg_exclude_padding;
  const auto inference = dnnl::prop_kind::forward_inference;
  const memory::desc plane = act(Dims{in[0], in[1], h, w}, cl);
  const memory::desc rows = act(Dims{in[0], in[1], h, 1}, cl), dst = act(out, cl);
  const dnnl::pooling_forward::primitive_desc first(cpuEngine(), inference, avg, plane, rows,
                                                    {1, 1}, {1, w}, {0, 0}, {0, 0}, {0, 0});
  const dnnl::pooling_forward::primitive_desc second(cpuEngine(), inference, avg, rows, dst,
                                                     {1, 1}, {h, 1}, {0, 0}, {0, 0}, {0, 0},
                                                     attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::pooling_forward(second);
  op->addPort(true, kStageInput, plain(in), act(in, cl));
  op->stages_.push_back({dnnl::pooling_forward(first), memory(plane, cpuEngine(), nullptr),
                         memory(rows, cpuEngine())});
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, plain(out), dst);
  return op;
}

}  // namespace

std::unique_ptr<DnnlOp> makePool(const OpDesc& d, const PostOps& post, int threads, bool cl) {
  const PoolParams& p = d.pool;
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  if (in.size() != 4 || p.blend != 0.0f) return nullptr;
  // Ceil mode gives outputs whose windows reach past pb/pr: pad the right side enough.
  const int pb = std::max(p.pb, (out[2] - 1) * p.sh + (p.kh - 1) * p.dh + 1 - in[2] - p.pt);
  const int pr = std::max(p.pr, (out[3] - 1) * p.sw + (p.kw - 1) * p.dw + 1 - in[3] - p.pl);
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  if (p.mode != CNML_POOL_MAX) {
    // Counting pad cells (real == false) counts only those inside the explicit pads in the
    // mock; oneDNN's include-padding counts the whole window, the cells ceil mode adds
    // past them too: the two agree unless ceil mode added some (Inception-v3's 3x3 pools
    // with padding 1 map).
    const bool extended = pb != p.pb || pr != p.pr;
    if (!p.real && extended) return nullptr;
    alg = p.real ? dnnl::algorithm::pooling_avg_exclude_padding
                 : dnnl::algorithm::pooling_avg_include_padding;
  }
  const memory::desc src = act(in, cl), dst = act(out, cl);
  if (p.mode != CNML_POOL_MAX)
    if (std::unique_ptr<DnnlOp> op = makeGlobalAverage(d, post, threads, cl)) return op;
  const dnnl::pooling_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, alg, src, dst, {p.sh, p.sw},
      {p.kh, p.kw}, {p.dh - 1, p.dw - 1}, {p.pt, p.pl}, {pb, pr}, attrOf(post));
  return srcToDst(dnnl::pooling_forward(pd), d, src, dst, post, threads);
}

// Resize of H and W as oneDNN's resampling, where its coordinates are ONNX's: bilinear with
// half-pixel centres (PyTorch's align_corners=False; oneDNN clamps at the edges as
// onnxruntime does), and nearest with an integer upscale of floor-rounded asymmetric
// coordinates (floor((o + 0.5) / s) == floor(o / s)). Other modes stay on the mock's
// kernels. The tiny segmentation export spent half its forward in the mock's two resizes.
std::unique_ptr<DnnlOp> makeResample(const OpDesc& d, const PostOps& post, int threads,
                                     bool cl) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  if (in.size() != 4 || out.size() != 4) return nullptr;
  // Binary post-ops on a resampling are left unproven (oneDNN 3.2 read a pooling's at the
  // wrong offsets): such a chain is declined and the resize runs alone.
  if (!post.operands.empty()) return nullptr;
  const InterpParams& p = d.interp;
  dnnl::algorithm alg;
  if (d.kind == OpKind::kInterp) {
    const bool half = p.coords == CNML_INTERP_HALF_PIXEL ||
                      (p.coords == CNML_INTERP_PYTORCH_HALF_PIXEL && out[2] > 1 && out[3] > 1);
    if (!half) return nullptr;
    alg = dnnl::algorithm::resampling_linear;
  } else {
    if (p.coords != CNML_INTERP_ASYMMETRIC || p.round != CNML_NEAREST_FLOOR ||
        out[2] % in[2] != 0 || out[3] % in[3] != 0)
      return nullptr;
    alg = dnnl::algorithm::resampling_nearest;
  }
  const memory::desc src = act(in, cl), dst = act(out, cl);
  const dnnl::resampling_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, alg, src, dst, attrOf(post));
  return srcToDst(dnnl::resampling_forward(pd), d, src, dst, post, threads);
}

// Cross-channel LRN with the mock's divisor (size for V3, and for V1 while the window fits
// the channels) and a centred window (odd sizes; ONNX's is lopsided for even ones), in
// channels last, the layout oneDNN has a vector kernel for and a fusion's convolutions
// hand over. The mock's kernel takes a pow per element: 8 ms of AlexNet's first LRN.
std::unique_ptr<DnnlOp> makeLrn(const OpDesc& d, int threads) {
  const LrnParams& p = d.lrn;
  const Dims& in = d.inputs[0].dims;
  if (in.size() != 4 || p.size % 2 == 0 || p.type == CNML_LRN_V2 ||
      (p.type == CNML_LRN_V1 && p.size > 2 * in[1] - 1))
    return nullptr;
  const memory::desc inner(plain(in).get_dims(), DT::f32, Tag::acdb);
  const dnnl::lrn_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels,
      inner, inner, p.size, static_cast<float>(p.alpha), static_cast<float>(p.beta),
      static_cast<float>(p.k));
  return srcToDst(dnnl::lrn_forward(pd), d, pd.src_desc(), pd.dst_desc(), PostOps(), threads);
}

}  // namespace onednn
}  // namespace pz_sdk
