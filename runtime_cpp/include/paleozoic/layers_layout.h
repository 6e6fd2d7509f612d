// Layout layers: concat (with or without a constant operand), reshape, transpose, gather
// (embedding lookup) and slice.
#ifndef PALEOZOIC_LAYERS_LAYOUT_H_
#define PALEOZOIC_LAYERS_LAYOUT_H_

#include <string>
#include <vector>

#include "paleozoic/core.h"

namespace pz {

class ConcatLayer : public Layer {
 public:
  ConcatLayer(std::string name, std::vector<Tensor*> inputs, int axis);
  // With one constant operand (ViT's class token, expanded over the batch), a CNML_CONST
  // weight "constant" of shape `constant` bound with configLayer, placed before input
  // `constant_at` (inputs.size(): after the last).
  ConcatLayer(std::string name, std::vector<Tensor*> inputs, int axis, Shape constant,
              int constant_at);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
};

class ReshapeLayer : public ParamLayer<cnmlReshapeOpParam_t, cnmlDestroyReshapeOpParam> {
 public:
  ReshapeLayer(std::string name, Tensor& input, Shape shape);
};

class TransposeLayer : public ParamLayer<cnmlTransposeOpParam_t, cnmlDestroyTransposeOpParam> {
 public:
  TransposeLayer(std::string name, Tensor& input, std::vector<int> perm);
};

// Embedding lookup: rows of a constant table gathered along `axis` (0..3) by int32 indices
// (ONNX Gather of a float initializer by token ids, whose int64 -> int32 cast runs on the
// host): output shape table[:axis] + indices + table[axis+1:]. Weight: table. An index
// outside [0, table[axis]) fails the forward with a pz::SdkError naming the layer.
class GatherV2Layer : public Layer {
 public:
  GatherV2Layer(std::string name, Tensor& indices, Shape table_shape, int axis = 0);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
  void settleDataTypes() override;  // int32 indices in, the precision's dtype out

 private:
  const ConstTensor* table_ = nullptr;
  int axis_;
};

// y = x[begin:end:step] along every axis (one entry per input axis, as numpy's slices with
// positive steps): 0 <= begin < end <= dim, step >= 1; output dim ceil((end - begin) / step).
class SliceLayer : public ParamLayer<cnmlNdStridedSliceOpParam_t,
                                     cnmlDestroyNdStridedSliceOpParam> {
 public:
  SliceLayer(std::string name, Tensor& input, std::vector<int> begin, std::vector<int> end,
             std::vector<int> step);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_LAYOUT_H_
