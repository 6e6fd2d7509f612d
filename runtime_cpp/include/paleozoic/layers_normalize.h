// Normalisation layers: batch norm, per-channel scale, LRN and layer norm.
#ifndef PALEOZOIC_LAYERS_NORMALIZE_H_
#define PALEOZOIC_LAYERS_NORMALIZE_H_

#include <string>

#include "paleozoic/core.h"

namespace pz {

// y = (x - mean) * inv_std per channel. Weights: mean [C] and inv_std [C], the
// 1 / sqrt(variance + eps) the frontend computes (the SDK's var operand).
class BatchNormLayer : public Layer {
 public:
  BatchNormLayer(std::string name, Tensor& input);
};

// y = alpha * x + beta per channel (axis 1). Weights: alpha [C], beta [C].
class ScaleLayer : public Layer {
 public:
  ScaleLayer(std::string name, Tensor& input);
};

struct Lrn {
  int size;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
  explicit Lrn(int n) : size(n) {}
  Lrn& alphaBetaBias(double a, double b, double k) { alpha = a; beta = b; bias = k; return *this; }
};

// ONNX LRN semantics: y = x / (bias + alpha / size * sum_window(x^2))^beta.
class LrnLayer : public ParamLayer<cnmlLrnOpParam_t, cnmlDestroyLrnOpParam> {
 public:
  LrnLayer(std::string name, Tensor& input, const Lrn& params);
};

// ONNX LayerNormalization: over the axes axis..rank-1, y = (x - mean) / sqrt(var + epsilon)
// * gamma + beta. Weights: gamma, beta, each of prod(shape[axis:]) values.
class LayerNormLayer : public Layer {
 public:
  LayerNormLayer(std::string name, Tensor& input, int axis, float epsilon = 1e-5f);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_NORMALIZE_H_
