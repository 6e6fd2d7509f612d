// Helpers shared by the wrapper sources; not part of the public runtime API.
#ifndef PALEOZOIC_WRAPPER_DETAIL_H_
#define PALEOZOIC_WRAPPER_DETAIL_H_

#include <string>
#include <vector>

#include "paleozoic/layer_registry.h"
#include "paleozoic/runtime.h"

// Checks an SDK call; a failure throws pz::SdkError naming `owner` (a layer, tensor or
// block) and the call, and returns the status.
// The call's name is cut from its text only on failure: these sit on the run path.
#define PZ_CHECK(owner, call) ::pz::detail::checkCall((call), (owner), #call)

// In a layer's constructor: the SDK forward its op runs with (Layer::setForward).
#define PZ_FORWARD(call) setForward(call, #call)

namespace pz {
namespace detail {

// Creates an fp32 descriptor of `type` with `shape`; `owner` names the tensor or layer in errors.
cnmlTensor_t createTensorDesc(cnmlTensorType_t type, const Shape& shape, const std::string& owner);
// Destructor helper: never throws.
void destroyTensorDesc(cnmlTensor_t* desc) noexcept;

// check() for PZ_CHECK: `call_text` is the call's source text, of which the SDK function's
// name ("cnmlCreateConvOp(&op_, ...)" -> "cnmlCreateConvOp") goes into the error. Returns
// the status.
cnmlStatus_t checkCall(cnmlStatus_t status, const std::string& owner, const char* call_text);
cnrtRet_t checkCall(cnrtRet_t status, const std::string& owner, const char* call_text);

// Runs a shape function; a pz::Error it throws is re-thrown prefixed with the layer name.
template <typename ShapeFn>
Shape layerShape(const std::string& layer, ShapeFn fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(layer + ": " + e.what());
  }
}

// Each layer family's source appends the factories of its kinds (layer_registry.cpp): one
// source per family of the Python registry, paleozoic/ops/<family>.py -> layers_<family>.cpp.
void addConvFactories(std::vector<LayerFactory>& factories);
void addDenseFactories(std::vector<LayerFactory>& factories);
void addElementwiseFactories(std::vector<LayerFactory>& factories);
void addHostFactories(std::vector<LayerFactory>& factories);
void addImageFactories(std::vector<LayerFactory>& factories);
void addLayoutFactories(std::vector<LayerFactory>& factories);
void addNormalizeFactories(std::vector<LayerFactory>& factories);
void addPoolFactories(std::vector<LayerFactory>& factories);
void addRecurrentFactories(std::vector<LayerFactory>& factories);
void addReduceFactories(std::vector<LayerFactory>& factories);

// The input of a factory's one-input kind (makeLayer has checked the count).
inline Tensor& only(const std::vector<Tensor*>& inputs) { return *inputs.front(); }

// The text attribute `key`, which must be `first` or `second`: pz::Error "<layer>: unknown
// <what> '<text>'; use <first> or <second>" otherwise.
std::string eitherText(const LayerArgs& args, const std::string& layer, const char* key,
                       const char* what, const char* first, const char* second);

// Normalises a possibly negative axis into [0, rank) or throws pz::Error naming the layer.
int normaliseAxis(const std::string& layer, int axis, int rank);

// Throws pz::Error unless `in` is 4-D (NCHW); `what` names the layer kind.
void requireNchw(const Shape& in, const char* what);
// A sliding window's output length along `axis` (conv and pool): floor or ceil division of the
// sliding range; a ceil window must start inside input + pad_begin.
int slidingOutput(int in, int pad_begin, int pad_end, int effective_window, int stride, bool ceil,
                  const char* axis, const char* what);
// The channel count (axis 1) of a per-channel layer's input, or pz::Error naming the layer.
int channels(const std::string& layer, const Shape& in);

// The descriptors and device buffers of `tensors`, as the SDK's forwards of op lists of
// inputs (Concat, the recurrent op) take them; read at forward time (buffers may move).
struct TensorList {
  std::vector<cnmlTensor_t> descs;
  std::vector<void*> data;
  explicit TensorList(const std::vector<Tensor*>& tensors) {
    for (Tensor* t : tensors) {
      descs.push_back(t->desc());
      data.push_back(t->deviceData());
    }
  }
  int size() const { return static_cast<int>(descs.size()); }
};

// A tensor seen as [outer, n, inner] around `axis` (normalised): the rows a reduction
// along the axis walks, `inner` apart (the host layers').
struct AxisSpan {
  std::size_t outer, n, inner;
};
AxisSpan axisSpan(const Shape& shape, int axis);

}  // namespace detail
}  // namespace pz

#endif  // PALEOZOIC_WRAPPER_DETAIL_H_
