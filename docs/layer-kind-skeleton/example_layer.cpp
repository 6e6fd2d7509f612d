// Skeleton of a wrapper class's source: copy the constructor into the family source of
// runtime_cpp/wrapper/ and the factory into that file's detail::add...Factories.
#include "example_layer.h"

#include "detail.h"

namespace pz {

ExampleLayer::ExampleLayer(std::string name, Tensor& input, int axis)
    : Layer(name, {&input}, input.shape()) {
  // What the SDK op cannot do is refused here, naming the layer, not left to a wrong answer.
  if (detail::normaliseAxis(name_, axis, static_cast<int>(input.shape().size())) != 1) {
    throw Error(name_ + ": the SDK's Prelu op runs along axis 1, got axis " +
                std::to_string(axis));
  }
  // Weights are declared before the op that reads their descriptors; configLayer binds
  // them in this order (Layer::configLayer, with the extent checks).
  const ConstTensor& slope = declareWeight("slope", CNML_CONST, Shape{input.shape().at(1)});
  // How the kind's SDK op is created (SdkHandle<param, destroy> members own any parameter
  // objects). The op is created when its block compiles, once the block's precision has
  // set the dtypes and any cast is in place, so it reads its inputs through in(i).
  // PZ_CHECK turns a failing status into pz::SdkError naming this layer.
  defineOp([this, &slope] {
    PZ_CHECK(name_, cnmlCreatePreluOp(&op_, in(0), output_.desc(), slope.desc()));
  });
  // The SDK forward the op runs with; override forward() only for an op of another shape.
  PZ_FORWARD(cnmlComputePreluOpForward_V4);
}

namespace detail {

// Paste the push_back into the family's add...Factories: the Python registry builds the
// layer by this name, with these attributes in the LayerKind's attrs order.
void addExampleFactory(std::vector<LayerFactory>& factories) {
  factories.push_back({"example", 1, {"axis"},
                       [](const std::string& name, const std::vector<Tensor*>& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<ExampleLayer>(name, *in[0], a.integer("axis", 1));
                       }});
}

}  // namespace detail

}  // namespace pz
