// Normalisation layers: batch norm, per-channel scale, LRN and layer norm.
#include "detail.h"

namespace pz {

// ---- BatchNormLayer ---------------------------------------------------------------------

BatchNormLayer::BatchNormLayer(std::string name, Tensor& input)
    : Layer(name, {&input}, input.shape()) {
  const Shape per_channel{detail::channels(name_, input.shape())};
  const ConstTensor& mean = declareWeight("mean", CNML_CONST, per_channel);
  const ConstTensor& inv_std = declareWeight("inv_std", CNML_CONST, per_channel);
  defineOp([this, &mean, &inv_std] {
    PZ_CHECK(name_,
             cnmlCreateBatchNormOp(&op_, in(0), output_.desc(), mean.desc(), inv_std.desc()));
  });
  PZ_FORWARD(cnmlComputeBatchNormOpForward_V4);
}

// ---- ScaleLayer -----------------------------------------------------------------------

ScaleLayer::ScaleLayer(std::string name, Tensor& input) : Layer(name, {&input}, input.shape()) {
  const Shape per_channel{detail::channels(name_, input.shape())};
  const ConstTensor& alpha = declareWeight("alpha", CNML_CONST, per_channel);
  const ConstTensor& beta = declareWeight("beta", CNML_CONST, per_channel);
  defineOp([this, &alpha, &beta] {
    PZ_CHECK(name_, cnmlCreateScaleOp(&op_, in(0), output_.desc(), alpha.desc(), beta.desc()));
  });
  PZ_FORWARD(cnmlComputeScaleOpForward_V4);
}

// ---- LrnLayer -------------------------------------------------------------------------

LrnLayer::LrnLayer(std::string name, Tensor& input, const Lrn& params)
    : ParamLayer(name, {&input}, input.shape()) {
  PZ_CHECK(name_, cnmlCreateLrnOpParam(param_.out(), CNML_LRN_V3, params.size, params.alpha,
                                       params.beta, params.bias));
  defineOp([this] { PZ_CHECK(name_, cnmlCreateLrnOp(&op_, param_, in(0), output_.desc())); });
  PZ_FORWARD(cnmlComputeLrnOpForward_V4);
}

// ---- LayerNormLayer -------------------------------------------------------------------

LayerNormLayer::LayerNormLayer(std::string name, Tensor& input, int axis, float epsilon)
    : Layer(name, {&input}, input.shape()) {
  const Shape& shape = input.shape();
  const int a = detail::normaliseAxis(name_, axis, static_cast<int>(shape.size()));
  if (!(epsilon >= 0.0f)) {
    throw Error(name_ + ": layer norm's epsilon must be >= 0, got " + std::to_string(epsilon));
  }
  const Shape normalised(shape.begin() + a, shape.end());
  const ConstTensor& gamma = declareWeight("gamma", CNML_CONST, normalised);
  const ConstTensor& beta = declareWeight("beta", CNML_CONST, normalised);
  defineOp([this, a, epsilon, &gamma, &beta] {
    PZ_CHECK(name_, cnmlCreateNdLayerNormOp(&op_, a, in(0), output_.desc(), gamma.desc(),
                                            beta.desc(), epsilon));
  });
  PZ_FORWARD(cnmlComputeNdLayerNormOpForward_V4);
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace {

Lrn lrnParams(const LayerArgs& a) {
  Lrn p(a.integer("size"));
  return p.alphaBetaBias(a.real("alpha", p.alpha), a.real("beta", p.beta),
                         a.real("bias", p.bias));
}

}  // namespace

namespace detail {

void addNormalizeFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"batch_norm", 1, {},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs&) -> std::unique_ptr<Layer> {
                         return std::make_unique<BatchNormLayer>(name, *in[0]);
                       }});
  factories.push_back({"scale", 1, {},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs&) -> std::unique_ptr<Layer> {
                         return std::make_unique<ScaleLayer>(name, *in[0]);
                       }});
  factories.push_back({"lrn", 1,
                       {"size", "alpha", "beta", "bias"},
                       [](const std::string& name, const std::vector<Tensor*>& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<LrnLayer>(name, *in[0], lrnParams(a));
                       }});
  factories.push_back({"layer_norm", 1, {"axis", "epsilon"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<LayerNormLayer>(
                             name, *in[0], a.integer("axis"),
                             static_cast<float>(a.real("epsilon", 1e-5)));
                       }});
}

}  // namespace detail

}  // namespace pz
