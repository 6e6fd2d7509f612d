// Skeleton of a wrapper class: copy the class into the family header of
// runtime_cpp/include/paleozoic/ (layers_<family>.h, named as paleozoic/ops/<family>.py:
// layers_conv.h, layers_elementwise.h, layers_layout.h, ...) and rename Example throughout.
#ifndef PALEOZOIC_EXAMPLE_LAYER_H_
#define PALEOZOIC_EXAMPLE_LAYER_H_

#include <string>

#include "paleozoic/core.h"

namespace pz {

// y = x >= 0 ? x : slope[c] * x along `axis`. Weights: slope [C].
class ExampleLayer : public Layer {
 public:
  ExampleLayer(std::string name, Tensor& input, int axis = 1);
};

}  // namespace pz

#endif  // PALEOZOIC_EXAMPLE_LAYER_H_
