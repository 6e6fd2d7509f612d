// Dense layers: fully connected, batch dot (MatMul of two activations) and softmax.
#ifndef PALEOZOIC_LAYERS_DENSE_H_
#define PALEOZOIC_LAYERS_DENSE_H_

#include <string>

#include "paleozoic/core.h"

namespace pz {

// y[n, o] = sum_k x[n, k] * weight[o, k] + bias[o]; x is read flat per batch item.
// Weights: weight [out, k], bias [out] (optional).
class FullyConnectedLayer : public Layer {
 public:
  FullyConnectedLayer(std::string name, Tensor& input, int out_features);
};

// y = op(a) x op(b) over the last two axes (op: transposed when trans_a / trans_b), the
// leading (batch) axes broadcast as numpy's: ONNX MatMul of two activations.
class BatchDotLayer : public Layer {
 public:
  BatchDotLayer(std::string name, Tensor& a, Tensor& b, bool trans_a = false,
                bool trans_b = false);
};

// Softmax along any axis: the SDK's Softmax op on a 4-D (NCHW) or 2-D (NC) input, its Nd op
// otherwise. With `log`, LogSoftmax (the SDK's NdLogSoftmax op, max-subtracted).
class SoftmaxLayer : public Layer {
 public:
  SoftmaxLayer(std::string name, Tensor& input, int axis, bool log = false);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_DENSE_H_
