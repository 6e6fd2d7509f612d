// Per-element layers: activation, add, binary, prelu, unary, clip.
#ifndef PALEOZOIC_LAYERS_ELEMENTWISE_H_
#define PALEOZOIC_LAYERS_ELEMENTWISE_H_

#include <limits>  // emitted sessions write std::numeric_limits<float>::infinity()
#include <string>

#include "paleozoic/core.h"
#include "paleozoic/enums.h"

namespace pz {

class ActiveLayer : public Layer {
 public:
  ActiveLayer(std::string name, Tensor& input, Active fn);
};

// Element-wise sum of two tensors of equal shape.
class AddLayer : public Layer {
 public:
  AddLayer(std::string name, Tensor& a, Tensor& b);
};

// y = a (+ - * / ^) b. b has a's shape, or broadcasts to it: b's rank at most a's, dims
// right-aligned, each equal to a's or 1 (per-channel [1, C, 1, 1] or [C, 1, 1], scalar-like
// [1, 1, 1, 1], [1, 1, H, W], ...); y has a's shape. Equal shapes use the SDK's Add, Sub,
// Mult, RealDiv and Pow ops, a broadcast b its BroadcastAdd/Sub/Mult/Pow ops. RealDiv has no
// broadcast form, so a div needs equal shapes; a b that does not broadcast, or a div with
// unequal shapes, fails at construction with the SDK's status (pz::SdkError).
class BinaryLayer : public Layer {
 public:
  BinaryLayer(std::string name, Tensor& a, Tensor& b, Binary op);
};

// y = x if x >= 0 else slope[c] * x, per channel (axis 1). LeakyRelu is a PRelu whose slope
// holds alpha for every channel. Weights: slope [C].
class PReluLayer : public Layer {
 public:
  PReluLayer(std::string name, Tensor& input);
};

// y = f(x) element-wise: sqrt, 1/sqrt, x^power (a constant), erf, GELU (exact or tanh),
// exp, log, |x|, -x, 1.0 where x == 0 (not).
class UnaryLayer : public Layer {
 public:
  UnaryLayer(std::string name, Tensor& input, Unary fn, float power = 1.0f);
};

// ONNX Clip with any constant bounds (the SDK's Clip): y = min(max(x, lower), upper); nan
// stays nan; a bound may be infinite. The bounds relu, relu1 and relu6 have are an
// ActiveLayer instead.
class ClipLayer : public Layer {
 public:
  ClipLayer(std::string name, Tensor& input, float lower, float upper);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_ELEMENTWISE_H_
