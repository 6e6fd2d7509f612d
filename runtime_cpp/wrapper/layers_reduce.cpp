// The reduction layer: one SDK NdReduce op over the given axes.
#include <algorithm>

#include "detail.h"

namespace pz {

// ---- ReduceLayer ----------------------------------------------------------------------

namespace {

Shape reducedShape(const std::string& layer, const Shape& in, const std::vector<int>& axes,
                   bool keepdims) {
  bool ascending = !axes.empty();
  for (std::size_t i = 0; i < axes.size(); ++i)
    ascending = ascending && axes[i] >= 0 && axes[i] < static_cast<int>(in.size()) &&
                (i == 0 || axes[i] > axes[i - 1]);
  if (!ascending) {
    throw Error(layer + ": reduce axes must be distinct, ascending and within the " +
                std::to_string(in.size()) + "-D input " + shapeToString(in));
  }
  Shape out;
  for (std::size_t a = 0; a < in.size(); ++a) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(a)) != axes.end();
    if (!reduced) out.push_back(in[a]);
    else if (keepdims) out.push_back(1);
  }
  if (out.empty()) {
    throw Error(layer + ": reducing every axis of " + shapeToString(in) +
                " without keepdims leaves a 0-d tensor; keep the dims");
  }
  return out;
}

}  // namespace

ReduceLayer::ReduceLayer(std::string name, Tensor& input, Reduce op, std::vector<int> axes,
                         bool keepdims)
    : Layer(name, {&input}, reducedShape(name, input.shape(), axes, keepdims)) {
  defineOp([this, op, axes = std::move(axes)] {
    // The SDK's NdReduce op of each kind takes the same arguments; `call` names it in errors.
    const auto make = [&](decltype(&cnmlCreateNdReduceSumOp) create, const char* call) {
      const int n = static_cast<int>(axes.size());
      detail::checkCall(create(&op_, axes.data(), n, in(0), output_.desc()), name_, call);
    };
    switch (op) {
      case Reduce::kSum: make(cnmlCreateNdReduceSumOp, "cnmlCreateNdReduceSumOp"); break;
      case Reduce::kMean: make(cnmlCreateNdReduceMeanOp, "cnmlCreateNdReduceMeanOp"); break;
      case Reduce::kMax: make(cnmlCreateNdReduceMaxOp, "cnmlCreateNdReduceMaxOp"); break;
      case Reduce::kMin: make(cnmlCreateNdReduceMinOp, "cnmlCreateNdReduceMinOp"); break;
      case Reduce::kProd: make(cnmlCreateNdReduceProdOp, "cnmlCreateNdReduceProdOp"); break;
    }
  });
  switch (op) {
    case Reduce::kSum: PZ_FORWARD(cnmlComputeNdReduceSumOpForward_V4); break;
    case Reduce::kMean: PZ_FORWARD(cnmlComputeNdReduceMeanOpForward_V4); break;
    case Reduce::kMax: PZ_FORWARD(cnmlComputeNdReduceMaxOpForward_V4); break;
    case Reduce::kMin: PZ_FORWARD(cnmlComputeNdReduceMinOpForward_V4); break;
    case Reduce::kProd: PZ_FORWARD(cnmlComputeNdReduceProdOpForward_V4); break;
  }
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace detail {

void addReduceFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"reduce", 1, {"op", "axes", "keepdims"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const auto op = parseEnum<Reduce>(a.text("op"), name);
                         return std::make_unique<ReduceLayer>(name, *in[0], op, a.ints("axes"),
                                                              a.flag("keepdims", true));
                       }});
}

}  // namespace detail

}  // namespace pz
