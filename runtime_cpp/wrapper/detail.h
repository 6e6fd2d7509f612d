// Helpers shared by the wrapper sources; not part of the public runtime API.
#ifndef PALEOZOIC_WRAPPER_DETAIL_H_
#define PALEOZOIC_WRAPPER_DETAIL_H_

#include <string>

#include "paleozoic/runtime.h"

namespace pz {
namespace detail {

// Creates an fp32 descriptor of `type` with `shape`; `owner` names the tensor or layer in errors.
cnmlTensor_t createTensorDesc(cnmlTensorType_t type, const Shape& shape, const std::string& owner);
// Destructor helper: never throws.
void destroyTensorDesc(cnmlTensor_t* desc) noexcept;

// Checks a forward call inside Layer::forward so the error names the SDK call; returns status.
cnmlStatus_t checkForward(cnmlStatus_t status, const std::string& layer, const char* call);

// Runs a shape function; a pz::Error it throws is re-thrown prefixed with the layer name.
template <typename ShapeFn>
Shape layerShape(const std::string& layer, ShapeFn fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(layer + ": " + e.what());
  }
}

// Weights handed out by WeightFile::get, by data pointer: bind() checks their extent.
void registerWeight(const void* owner, const float* data, const std::string& name,
                    const Shape& shape, const std::string& path);
void forgetWeights(const void* owner) noexcept;
// Throws pz::Error naming the layer when `data` is a registered weight whose element count
// differs from `shape`'s.
void checkWeightExtent(const std::string& layer, const float* data, const Shape& shape);

// configLayer of the layers with a filter and an optional bias (Conv, Deconv, MLP): binds
// both, a missing bias as zeros; a missing weight is an error naming the layer.
void bindFilterAndBias(const std::string& layer, ConstTensor& filter, ConstTensor& bias,
                       const float* weight, const float* bias_data);

// Normalises a possibly negative axis into [0, rank) or throws pz::Error naming the layer.
int normaliseAxis(const std::string& layer, int axis, int rank);

}  // namespace detail
}  // namespace pz

#endif  // PALEOZOIC_WRAPPER_DETAIL_H_
