// Skeleton of a wrapper class: copy the class into the family header of
// runtime_cpp/include/paleozoic/ (layers_conv_pool.h, layers_elementwise.h, layers_misc.h)
// and rename Example throughout.
#ifndef PALEOZOIC_EXAMPLE_LAYER_H_
#define PALEOZOIC_EXAMPLE_LAYER_H_

#include <string>

#include "paleozoic/core.h"

namespace pz {

// y = x >= 0 ? x : alpha * slope[c] * x per channel (axis 1). Weights: slope [C].
class ExampleLayer : public Layer {
 public:
  ExampleLayer(std::string name, Tensor& input, double alpha = 1.0);
};

}  // namespace pz

#endif  // PALEOZOIC_EXAMPLE_LAYER_H_
