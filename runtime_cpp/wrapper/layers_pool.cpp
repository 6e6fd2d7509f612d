// Pooling layers: max / average pooling and global average pooling.
#include "detail.h"

namespace pz {

// ---- output shape ---------------------------------------------------------------------

Shape poolOutputShape(const Shape& in, const Pool& p) {
  detail::requireNchw(in, "pool");
  if (p.kernel.h < 1 || p.kernel.w < 1) throw Error("pool: kernel must be >= 1");
  return {in[0], in[1],
          detail::slidingOutput(in[2], p.pads_.top, p.pads_.bottom, p.kernel.h, p.stride_.h,
                                p.ceil_mode_, "H", "pool"),
          detail::slidingOutput(in[3], p.pads_.left, p.pads_.right, p.kernel.w, p.stride_.w,
                                p.ceil_mode_, "W", "pool")};
}

// ---- pooling --------------------------------------------------------------------------

namespace {

Pool globalPool(const std::string& layer, const Shape& in) {
  if (in.size() != 4) {
    throw Error(layer + ": global average pooling needs a 4-D NCHW input, got " +
                shapeToString(in));
  }
  return Pool::avg({in[2], in[3]});
}

}  // namespace

PoolLayer::PoolLayer(std::string name, Tensor& input, const Pool& params)
    : ParamLayer(name, {&input}, detail::layerShape(name, [&] {
              return poolOutputShape(input.shape(), params);
            })) {
  const Pool& p = params;
  PZ_CHECK(name_,
           cnmlCreatePoolOpParam_V3(param_.out(), p.kernel.h, p.kernel.w, p.stride_.h, p.stride_.w,
                                    p.pads_.top, p.pads_.bottom, p.pads_.left, p.pads_.right, 1, 1,
                                    p.mode, p.ceil_mode_ ? CNML_POOL_KFULL : CNML_POOL_KVALID,
                                    !p.count_include_pad_, 0.0f));
  defineOp([this] { PZ_CHECK(name_, cnmlCreatePoolOp(&op_, param_, in(0), output_.desc())); });
  PZ_FORWARD(cnmlComputePoolOpForward_V4);
}

GlobalAvgPoolLayer::GlobalAvgPoolLayer(std::string name, Tensor& input)
    : PoolLayer(name, input, globalPool(name, input.shape())) {}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace {

Pool poolParams(const std::string& layer, const LayerArgs& a) {
  const std::string mode = detail::eitherText(a, layer, "mode", "pool mode", "max", "avg");
  Pool p = mode == "max" ? Pool::max(a.window("kernel")) : Pool::avg(a.window("kernel"));
  const Window stride = a.window("stride", p.stride_);
  const Pads pads = a.pads("pads", p.pads_);
  p.stride(stride.h, stride.w)
      .pads(pads.top, pads.bottom, pads.left, pads.right)
      .ceilMode(a.flag("ceil_mode", p.ceil_mode_))
      .countIncludePad(a.flag("count_include_pad", p.count_include_pad_));
  return p;
}

}  // namespace

namespace detail {

void addPoolFactories(std::vector<LayerFactory>& factories) {
  factories.push_back(
      {"pool", 1,
       {"mode", "kernel", "stride", "pads", "ceil_mode", "count_include_pad"},
       [](const std::string& name, const std::vector<Tensor*>& in,
          const LayerArgs& a) -> std::unique_ptr<Layer> {
         return std::make_unique<PoolLayer>(name, detail::only(in), poolParams(name, a));
       }});
  factories.push_back({"global_avg_pool", 1, {},
                       [](const std::string& name, const std::vector<Tensor*>& in,
                          const LayerArgs&) -> std::unique_ptr<Layer> {
                         return std::make_unique<GlobalAvgPoolLayer>(name, detail::only(in));
                       }});
}

}  // namespace detail

}  // namespace pz
