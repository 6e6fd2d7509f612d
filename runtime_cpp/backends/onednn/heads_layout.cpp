// Heads that move data only: reshape/transpose chains and slices as one reorder between
// strided views, and concat.
#include "heads.h"

namespace pz_sdk {
namespace onednn {

namespace {

// A strided view of `dims` (element strides): numpy's no-copy reshape of (dims, strides)
// to `to`; false when the data would have to move.
bool reshapeView(const memory::dims& dims, const memory::dims& strides, const memory::dims& to,
                 memory::dims* out) {
  memory::dims od, os;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) {
      od.push_back(dims[i]);
      os.push_back(strides[i]);
    }
  memory::dims result(to.size(), 1);
  std::size_t ni = 0, nj = 1, oi = 0, oj = 1;
  while (ni < to.size() && oi < od.size()) {
    memory::dim np = to[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= to.size()) return false;
        np *= to[nj++];
      } else {
        if (oj >= od.size()) return false;
        op *= od[oj++];
      }
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)  // the merged old axes must be contiguous
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    result[nj - 1] = os[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) result[k - 1] = result[k] * to[k];
    ni = nj++;
    oi = oj++;
  }
  // Trailing unit axes take any stride.
  for (; ni < to.size(); ++ni) result[ni] = ni > 0 ? result[ni - 1] * to[ni - 1] : 1;
  *out = result;
  return true;
}

}  // namespace

bool layoutViews(const std::vector<const OpDesc*>& chain, const memory::desc& in_md,
                 const memory::desc& out_md, memory::desc* src, memory::desc* dst) {
  memory::dims dims = in_md.get_dims(), strides = in_md.get_strides();
  std::size_t k = 0;
  for (; k < chain.size(); ++k) {  // forward over the input's memory while views allow
    const OpDesc& d = *chain[k];
    const memory::dims to = dimsOf(d.outputs[0].dims);
    if (d.kind == OpKind::kTranspose) {
      memory::dims ps;
      for (int p : d.perm) ps.push_back(strides[static_cast<std::size_t>(p)]);
      strides = ps;
    } else if (d.kind != OpKind::kReshape || !reshapeView(dims, strides, to, &strides)) {
      break;
    }
    dims = to;
  }
  memory::dims out_dims = out_md.get_dims(), out_strides = out_md.get_strides();
  for (std::size_t j = chain.size(); j-- > k;) {  // the rest backward over the output's
    const OpDesc& d = *chain[j];
    const memory::dims from = dimsOf(d.inputs[0].dims);
    if (d.kind == OpKind::kTranspose) {
      memory::dims is(from.size());
      for (std::size_t i = 0; i < d.perm.size(); ++i)
        is[static_cast<std::size_t>(d.perm[i])] = out_strides[i];
      out_strides = is;
    } else if (d.kind != OpKind::kReshape ||
               !reshapeView(out_dims, out_strides, from, &out_strides)) {
      return false;
    }
    out_dims = from;
  }
  *src = memory::desc(dims, DT::f32, strides);
  *dst = memory::desc(out_dims, DT::f32, out_strides);
  return true;
}

// A channel shuffle (Reshape, Transpose, Reshape), or any chain of reshapes and transposes,
// as one reorder between views of its input and output; a 4-D side in channels last when
// `cl` (ShuffleNetV2's shuffle between channels-last convolutions; a flatten of NHWC).
std::unique_ptr<DnnlOp> makeLayoutChain(const std::vector<const OpDesc*>& chain, int threads,
                                        bool cl) {
  const Dims& in = chain.front()->inputs[0].dims;
  const Dims& out = chain.back()->outputs[0].dims;
  const memory::desc in_md = act(in, cl), out_md = act(out, cl);  // act: 4-D only
  memory::desc src, dst;
  if (!layoutViews(chain, in_md, out_md, &src, &dst)) return nullptr;
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), src, cpuEngine(), dst));
  // The caller's buffers are dense; the views are of the layouts chosen above.
  op->addPort(true, DNNL_ARG_FROM, plain(in), in_md);
  op->views_[DNNL_ARG_FROM] = {memory(src, cpuEngine(), nullptr), 0};
  op->addPort(false, DNNL_ARG_TO, plain(out), out_md);
  op->views_[DNNL_ARG_TO] = {memory(dst, cpuEngine(), nullptr), 0};
  return op;
}

// A slice as a reorder from a strided view of its input (strides times the steps, the data
// handle moved to the first element read), in channels last when `cl`: ShuffleNetV2's
// channel split, Swin's patch merging (x[:, 0::2, 1::2]).
std::unique_ptr<DnnlOp> makeSlice(const OpDesc& d, int threads, bool cl) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const memory::desc in_md = act(in, cl), out_md = act(out, cl);
  const memory::dims strides = in_md.get_strides();
  memory::dims view_strides;
  std::size_t first = 0;
  for (std::size_t a = 0; a < in.size(); ++a) {
    view_strides.push_back(strides[a] * d.slice.stride[a]);
    first += static_cast<std::size_t>(d.slice.begin[a] * strides[a]);
  }
  const memory::desc src(dimsOf(out), DT::f32, view_strides);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), src, cpuEngine(), out_md));
  op->addPort(true, DNNL_ARG_FROM, plain(in), in_md);
  op->views_[DNNL_ARG_FROM] = {memory(src, cpuEngine(), nullptr), first * sizeof(float)};
  op->addPort(false, DNNL_ARG_TO, plain(out), out_md);
  return op;
}

// Const operands (a class token) are sources the op owns; the inputs keep their order.
std::unique_ptr<DnnlOp> makeConcat(const OpDesc& d, int threads, bool cl) {
  std::vector<memory::desc> srcs;
  for (int p : d.pieces) srcs.push_back(act(p >= 0 ? d.inputs[p].dims : d.consts[-1 - p]->dims, cl));
  const memory::desc dst = act(d.outputs[0].dims, cl);
  const dnnl::concat::primitive_desc pd(cpuEngine(), dst, d.axis, srcs);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::concat(pd);
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const int arg = DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i);
    const int p = d.pieces[i];
    if (p >= 0)
      op->addPort(true, arg, plain(d.inputs[p].dims), srcs[i]);
    else
      op->addConst(arg, plain(d.consts[-1 - p]->dims), d.consts[-1 - p]->data, srcs[i]);
  }
  op->addPort(false, DNNL_ARG_DST, plain(d.outputs[0].dims), dst);
  return op;
}

}  // namespace onednn
}  // namespace pz_sdk
