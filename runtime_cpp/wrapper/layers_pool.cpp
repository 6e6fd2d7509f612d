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

using PoolParam = SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam>;

void createPoolParam(const std::string& name, PoolParam& param, const Pool& p) {
  PZ_CHECK(name,
           cnmlCreatePoolOpParam_V3(param.out(), p.kernel.h, p.kernel.w, p.stride_.h, p.stride_.w,
                                    p.pads_.top, p.pads_.bottom, p.pads_.left, p.pads_.right, 1, 1,
                                    p.mode, p.ceil_mode_ ? CNML_POOL_KFULL : CNML_POOL_KVALID,
                                    !p.count_include_pad_, 0.0f));
}

Pool globalPool(const Shape& in) {
  if (in.size() != 4) {
    throw Error("global average pooling needs a 4-D NCHW input, got " + shapeToString(in));
  }
  return Pool::avg({in[2], in[3]});
}

}  // namespace

PoolLayer::PoolLayer(std::string name, Tensor& input, const Pool& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return poolOutputShape(input.shape(), params); })) {
  createPoolParam(name_, param_, params);
  defineOp([this] { PZ_CHECK(name_, cnmlCreatePoolOp(&op_, param_, in(0), output_.desc())); });
  PZ_FORWARD(cnmlComputePoolOpForward_V4);
}

GlobalAvgPoolLayer::GlobalAvgPoolLayer(std::string name, Tensor& input)
    : Layer(name, {&input}, detail::layerShape(name, [&] {
              return poolOutputShape(input.shape(), globalPool(input.shape()));
            })) {
  createPoolParam(name_, param_, globalPool(input.shape()));
  defineOp([this] { PZ_CHECK(name_, cnmlCreatePoolOp(&op_, param_, in(0), output_.desc())); });
  PZ_FORWARD(cnmlComputePoolOpForward_V4);
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace {

Tensor& only(const std::vector<Tensor*>& inputs) { return *inputs.front(); }

Pool poolParams(const std::string& layer, const LayerArgs& a) {
  const std::string mode = a.text("mode");
  if (mode != "max" && mode != "avg") {
    throw Error(layer + ": unknown pool mode '" + mode + "'; use max or avg");
  }
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
         return std::make_unique<PoolLayer>(name, only(in), poolParams(name, a));
       }});
  factories.push_back({"global_avg_pool", 1, {},
                       [](const std::string& name, const std::vector<Tensor*>& in,
                          const LayerArgs&) -> std::unique_ptr<Layer> {
                         return std::make_unique<GlobalAvgPoolLayer>(name, only(in));
                       }});
}

}  // namespace detail

}  // namespace pz
