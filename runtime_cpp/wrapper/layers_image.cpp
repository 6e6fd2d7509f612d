// The resize layer: nearest and bilinear.
#include "detail.h"

namespace pz {

// ---- output shape ---------------------------------------------------------------------

Shape interpOutputShape(const Shape& in, const Interp& p) {
  detail::requireNchw(in, "interp");
  if (p.size.h < 1 || p.size.w < 1) {
    throw Error("interp: output size must be >= 1, got " + std::to_string(p.size.h) + "x" +
                std::to_string(p.size.w));
  }
  return {in[0], in[1], p.size.h, p.size.w};
}

// ---- InterpLayer --------------------------------------------------------------------

InterpLayer::InterpLayer(std::string name, Tensor& input, const Interp& params)
    : Layer(name, {&input},
            detail::layerShape(name, [&] { return interpOutputShape(input.shape(), params); })) {
  const InterpCoordinates c = params.coordinates_;
  if (!params.linear_) {
    PZ_CHECK(name_,
             cnmlCreateNearestNeighborOpParam(nearest_param_.out(), params.size.w, params.size.h));
    // CNML's default is asymmetric with floor; align_corners rounds half up (TensorFlow's).
    if (c == InterpCoordinates::kAlignCorners &&
        params.rounding_ == InterpRounding::kRoundPreferCeil) {
      PZ_CHECK(name_, cnmlSetNearestNeighborAlignCorner(nearest_param_.address(), true));
    } else if (c != InterpCoordinates::kAsymmetric || params.rounding_ != InterpRounding::kFloor) {
      PZ_CHECK(name_, cnmlSetNearestNeighborCoordinateMode(nearest_param_.address(), sdkValue(c)));
      PZ_CHECK(name_, cnmlSetNearestNeighborRoundMode(nearest_param_.address(),
                                                      sdkValue(params.rounding_)));
    }
    defineOp([this] {
      PZ_CHECK(name_, cnmlCreateNearestNeighborOp(&op_, in(0), output_.desc(), nearest_param_));
    });
  } else {
    PZ_CHECK(name_, cnmlCreateInterpOpParam(linear_param_.out(), params.size.w, params.size.h,
                                            c == InterpCoordinates::kAlignCorners));
    if (c != InterpCoordinates::kAlignCorners && c != InterpCoordinates::kAsymmetric) {
      PZ_CHECK(name_, cnmlSetInterpCoordinateMode(linear_param_.address(), sdkValue(c)));
    }
    defineOp([this] {
      PZ_CHECK(name_, cnmlCreateInterpOp(&op_, in(0), output_.desc(), linear_param_));
    });
  }
  if (params.linear_) {
    PZ_FORWARD(cnmlComputeInterpOpForward_V4);
  } else {
    PZ_FORWARD(cnmlComputeNearestNeighborOpForward_V4);
  }
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace {

Interp interpParams(const std::string& layer, const LayerArgs& a) {
  const std::string mode =
      detail::eitherText(a, layer, "mode", "interp mode", "nearest", "linear");
  const auto c = parseEnum<InterpCoordinates>(a.text("coordinates", "half_pixel"), layer);
  Interp p = mode == "nearest" ? Interp::nearest(a.window("size"))
                               : Interp::linear(a.window("size"));
  p.coordinates(c);
  const std::string rounding = a.text("rounding", mode == "nearest" ? "round_prefer_floor" : "");
  if (mode == "nearest") {
    p.rounding(parseEnum<InterpRounding>(rounding, layer));
  } else if (!rounding.empty()) {
    throw Error(layer + ": linear interp takes no rounding (give \"\"), got '" + rounding + "'");
  }
  return p;
}

}  // namespace

namespace detail {

void addImageFactories(std::vector<LayerFactory>& factories) {
  factories.push_back({"interp", 1,
                       {"mode", "size", "coordinates", "rounding"},
                       [](const std::string& name, const std::vector<Tensor*>& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<InterpLayer>(name, detail::only(in),
                                                              interpParams(name, a));
                       }});
}

}  // namespace detail

}  // namespace pz
