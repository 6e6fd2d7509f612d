// The reduction layer: sum, mean, max, min or product over axes.
#ifndef PALEOZOIC_LAYERS_REDUCE_H_
#define PALEOZOIC_LAYERS_REDUCE_H_

#include <string>
#include <vector>

#include "paleozoic/core.h"
#include "paleozoic/enums.h"

namespace pz {

// The sum, mean, max, min or product over `axes` (distinct, ascending, at least one): one
// SDK NdReduce op. The output keeps the reduced axes as 1s, or drops them without
// `keepdims` (at least one axis must remain).
class ReduceLayer : public Layer {
 public:
  ReduceLayer(std::string name, Tensor& input, Reduce op, std::vector<int> axes,
              bool keepdims = true);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_REDUCE_H_
