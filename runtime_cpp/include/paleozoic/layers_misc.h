// Fully connected, softmax and the layout layers: concat, reshape, transpose, slice.
#ifndef PALEOZOIC_LAYERS_MISC_H_
#define PALEOZOIC_LAYERS_MISC_H_

#include <string>
#include <vector>

#include "paleozoic/core.h"

namespace pz {

// y[n, o] = sum_k x[n, k] * weight[o, k] + bias[o]; x is read flat per batch item.
// Weights: weight [out, k], bias [out] (optional).
class FullyConnectedLayer : public Layer {
 public:
  FullyConnectedLayer(std::string name, Tensor& input, int out_features);
};

class SoftmaxLayer : public Layer {
 public:
  SoftmaxLayer(std::string name, Tensor& input, int axis);
};

class ConcatLayer : public Layer {
 public:
  ConcatLayer(std::string name, std::vector<Tensor*> inputs, int axis);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
};

class ReshapeLayer : public Layer {
 public:
  ReshapeLayer(std::string name, Tensor& input, Shape shape);

 private:
  SdkHandle<cnmlReshapeOpParam_t, cnmlDestroyReshapeOpParam> param_;
};

class TransposeLayer : public Layer {
 public:
  TransposeLayer(std::string name, Tensor& input, std::vector<int> perm);

 private:
  SdkHandle<cnmlTransposeOpParam_t, cnmlDestroyTransposeOpParam> param_;
};

// y = x[begin:end:step] along every axis (one entry per input axis, as numpy's slices with
// positive steps): 0 <= begin < end <= dim, step >= 1; output dim ceil((end - begin) / step).
class SliceLayer : public Layer {
 public:
  SliceLayer(std::string name, Tensor& input, std::vector<int> begin, std::vector<int> end,
             std::vector<int> step);

 private:
  SdkHandle<cnmlNdStridedSliceOpParam_t, cnmlDestroyNdStridedSliceOpParam> param_;
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_MISC_H_
