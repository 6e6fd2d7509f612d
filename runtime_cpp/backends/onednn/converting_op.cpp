// ConvertingOp's run, and the int8 and fp16 convolutions and int8 inner products it computes.
#include "converting_op.h"

#include <limits>

namespace pz_sdk {
namespace onednn {

void ConvertingOp::run(const void* const* inputs, void* const* outputs) {
  ThreadScope scope(threads_);
  placeStaging();
  const auto* x = static_cast<const std::uint16_t*>(inputs[0]);
  if (int8_ && src_.from)
    convertDense(static_cast<const float*>(src_.from.get_data_handle()),
                 src_.innerData<std::int8_t>(), src_.inner.get_desc().get_size(), threads_,
                 QuantizeFloatRow{{step_inverse_}});
  else if (int8_)
    stage<std::int8_t>(src_, x, QuantizeRow{step_inverse_});
  else
    stage<float>(src_, x, DecodeRow());
  for (std::size_t i = 0; i < extra_.size(); ++i)
    stage<float>(extra_[i], static_cast<const std::uint16_t*>(inputs[i + 1]), DecodeRow());
  prim_.execute(stream_, args_);
  if (skip_dense_) {
    stream_.wait();
    return;
  }
  if (dst_.route == Staged::kReorder) dst_.reorder.execute(stream_, dst_.inner, dst_.user);
  stream_.wait();
  auto* y = static_cast<std::uint16_t*>(outputs[0]);
  if (dst_.route == Staged::kChannelsLast)
    fromChannelsLast(dst_.innerData<float>(), y, dst_.planes, threads_);
  else
    encode(static_cast<const float*>(dst_.user.get_data_handle()), y, dst_floats_, threads_);
}

namespace {

dnnl::primitive_attr attrOf(bool int8, int scale_mask, const ChainPostOps& post,
                           bool dst_scale = false) {
  dnnl::primitive_attr attr;
  if (int8) attr.set_scales_mask(DNNL_ARG_WEIGHTS, scale_mask);
  if (dst_scale) attr.set_scales_mask(DNNL_ARG_DST, 0);
  attr.set_post_ops(post.ops);
  return attr;
}

// VNNI/AMX kernels sum int8 products exactly; others pre-scale the weights (see the top).
bool exactKernel(const char* impl) {
  const std::string name(impl);
  return name.find("vnni") != std::string::npos || name.find("amx") != std::string::npos;
}

}  // namespace

std::unique_ptr<ConvertingOp> makeConvertingConv(const OpDesc& d,
                                                 const std::vector<const OpDesc*>& chain,
                                                 int threads, const FloatPath& fp32, bool int8,
                                                 const Variant& v) {
  const double requant = v.requant;
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;
  if (in.size() != 4 || f.size() != 4) return nullptr;
  const int g = d.group;
  const DT dt = int8 ? DT::s8 : DT::f32, src_dt = int8 && v.u8 ? DT::u8 : dt;
  const memory::dims w_dims = g == 1 ? memory::dims{f[0], f[1], f[2], f[3]}
                                     : memory::dims{g, f[0] / g, f[1], f[2], f[3]};
  const memory::desc weights_user(w_dims, dt, g == 1 ? Tag::oihw : Tag::goihw);
  const int mask = g == 1 ? 1 : 3;  // per output channel: o, or g and o
  const bool bias = int8 || (d.consts.size() > 1 && d.consts[1]);
  const ConvParams& c = d.conv;
  const memory::desc src_user = dense(in, src_dt), dst_user = dense(out, DT::f32);
  auto any = [](const memory::desc& md) {
    return memory::desc(md.get_dims(), md.get_data_type(), Tag::any);
  };
  auto convPd = [&](const memory::desc& dst, const ChainPostOps& p) {
    return dnnl::convolution_forward::primitive_desc(
        cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        any(src_user), any(weights_user),
        bias ? memory::desc({out[1]}, DT::f32, Tag::a) : memory::desc(), dst, {c.sh, c.sw},
        {c.dh - 1, c.dw - 1}, {c.pt, c.pl}, {c.pb, c.pr}, attrOf(int8, mask, p, requant != 0));
  };
  // Chain inputs of the output's shape get the convolution's own layout (as makeConv's).
  const memory::desc layout = convPd(any(dst_user), ChainPostOps()).dst_desc();
  const std::vector<OpDesc> ops = asFloat(chain);
  ChainPostOps post = fp32.post_ops(pointers(ops), &layout);
  memory::desc dst = post.operands.empty() ? any(dst_user) : layout;
  memory::desc codes;  // requant: the int8 output, channels last as the readers take it
  if (requant != 0) {
    codes = memory::desc(memory::dims(out.begin(), out.end()), DT::s8, Tag::acdb);
    dst = codes;
    if (!endsNonNegative(chain))  // the mock clamps to -127, a conversion to s8 to -128
      post.ops.append_eltwise(dnnl::algorithm::eltwise_clip_v2,
                              static_cast<float>(-127.0 / requant),
                              std::numeric_limits<float>::max());
  }
  const auto pd = convPd(dst, post);
  if (int8 && !exactKernel(pd.impl_info_str())) return nullptr;
  const memory::desc channels_last(memory::dims(in.begin(), in.end()), src_dt, Tag::acdb);
  if (!int8 && pd.src_desc() != channels_last) return nullptr;
  auto op = std::make_unique<ConvertingOp>(threads, int8);
  op->prim_ = dnnl::convolution_forward(pd);
  op->bind(d, pd, src_user, requant != 0 ? codes : dst_user, weights_user, post);
  op->variant_ = v;
  op->nonneg_ = endsNonNegative(chain);
  if (requant != 0) {
    const float scale = static_cast<float>(1.0 / requant);
    const memory::desc one({1}, DT::f32, Tag::a);
    op->setConst(DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, one, &scale, one);
    op->skip_dense_ = true;
  }
  if (int8) {
    // Copies: the chain's records are the fusion's, and the links come later.
    auto copies = std::make_shared<std::vector<OpDesc>>();
    for (const OpDesc* o : chain) copies->push_back(*o);
    op->rebuild_ = [copies, threads, fp32](const Variant& w) -> std::unique_ptr<ConvertingOp> {
      ThreadScope scope(threads);
      try {
        return makeConvertingConv(copies->front(), pointers(*copies), threads, fp32, true, w);
      } catch (const dnnl::error&) {
        return nullptr;
      }
    };
  }
  return op;
}

namespace {

std::unique_ptr<BackendOp> makeInt8Mlp(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                       int threads, const FloatPath& fp32) {
  if (d.outputs[0].dims.size() != 2 && chain.size() > 1) return nullptr;
  const int n = d.inputs[0].dims[0];
  const int k = static_cast<int>(d.inputs[0].elements() / n);
  const int co = d.consts[0]->dims[0];
  const memory::desc src_user = dense({n, k}, DT::s8), dst_user = dense({n, co}, DT::f32);
  const memory::desc weights_user({co, k}, DT::s8, Tag::oi);
  const std::vector<OpDesc> ops = asFloat(chain);
  const ChainPostOps post = fp32.post_ops(pointers(ops), nullptr);
  const dnnl::inner_product_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, src_user,
      memory::desc({co, k}, DT::s8, Tag::any), memory::desc({co}, DT::f32, Tag::a), dst_user,
      attrOf(true, 1, post));
  if (!exactKernel(pd.impl_info_str())) return nullptr;
  auto op = std::make_unique<ConvertingOp>(threads, true);
  op->prim_ = dnnl::inner_product_forward(pd);
  op->bind(d, pd, src_user, dst_user, weights_user, post);
  return op;
}

}  // namespace

std::unique_ptr<BackendOp> makeInt8(const std::vector<const OpDesc*>& chain, int threads,
                                    const FloatPath& fp32) {
  const OpDesc& d = *chain.front();
  if (d.inputs.size() != 1 || d.inputs[0].dtype != CNML_DATA_FLOAT16 ||
      d.outputs[0].dtype != CNML_DATA_FLOAT16 || d.consts.empty() || !d.consts[0] ||
      d.consts[0]->q.empty())
    return nullptr;
  for (std::size_t k = 1; k < chain.size(); ++k)
    if (chain[k]->int8 || !allOf(chain[k]->inputs, CNML_DATA_FLOAT16) ||
        !allOf(chain[k]->outputs, CNML_DATA_FLOAT16))
      return nullptr;
  switch (d.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: return makeConvertingConv(d, chain, threads, fp32, true);
    case OpKind::kMlp: return makeInt8Mlp(d, chain, threads, fp32);
    default: return nullptr;
  }
}

}  // namespace onednn
}  // namespace pz_sdk
