// Layer base: consumer bookkeeping, compile-alone and run-alone paths, fusion marking.
#include "detail.h"

namespace pz {

Layer::Layer(std::string name, std::vector<Tensor*> inputs, Shape output_shape)
    : name_(std::move(name)), inputs_(std::move(inputs)), output_(name_, std::move(output_shape)) {
  for (Tensor* input : inputs_) {
    if (input == nullptr) throw Error(name_ + ": null input tensor");
  }
  for (Tensor* input : inputs_) input->addConsumer();
}

Layer::~Layer() {
  if (op_ != nullptr) cnmlDestroyBaseOp(&op_);
}

void Layer::checkConfigured(const char* what) const {
  if (!configured()) {
    throw Error(name_ + ": configLayer was not called before " + what +
                "; bind the layer's weights with configLayer first");
  }
}

const ConstTensor& Layer::declareWeight(std::string role, cnmlTensorType_t type, Shape shape,
                                        bool optional) {
  auto tensor = std::make_unique<ConstTensor>(name_, type, shape);
  weights_.push_back(
      Weight{WeightSpec{std::move(role), std::move(shape), optional}, std::move(tensor)});
  return *weights_.back().tensor;
}

std::vector<WeightSpec> Layer::weightSpecs() const {
  std::vector<WeightSpec> specs;
  for (const Weight& w : weights_) specs.push_back(w.spec);
  return specs;
}

namespace {

std::string roleList(const std::vector<WeightSpec>& specs) {
  std::string out;
  for (const WeightSpec& spec : specs) {
    if (!out.empty()) out += ", ";
    out += spec.optional ? spec.role + " or null" : spec.role;
  }
  return out;
}

// A weight with a known shape must hold as many values as the layer declared: a file's
// shape was checked against the emitted code, but the layer's parameters (kernel, input
// shape) may have been edited since.
void checkExtent(const std::string& layer, const WeightSpec& spec, const WeightView& view) {
  const std::size_t have = elementCount(view.shape);
  const std::size_t need = elementCount(spec.shape);
  if (!view.has_shape || have == need) return;
  if (view.file.empty()) {
    throw Error(layer + ": " + spec.role + " has " + std::to_string(have) + " values, expected " +
                std::to_string(need));
  }
  throw Error(layer + ": weight '" + view.name + "' from '" + view.file + "' has shape " +
              shapeToString(view.shape) + " (" + std::to_string(have) +
              " values) but the layer needs " + shapeToString(spec.shape) + " (" +
              std::to_string(need) +
              " values) -- the layer's configuration or input was edited without its weights; "
              "re-run paleozoic compile");
}

}  // namespace

void Layer::bindWeights(const std::vector<WeightView>& weights) {
  if (weights_.empty()) {
    throw Error(name_ + ": the layer has no weights to configure; do not call configLayer");
  }
  // Trailing optional weights may be left out, as default arguments would be.
  std::size_t required = 0;
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    if (!weights_[i].spec.optional) required = i + 1;
  }
  if (weights.size() > weights_.size() || weights.size() < required) {
    throw Error(name_ + ": configLayer takes " + std::to_string(weights_.size()) + " weight(s) (" +
                roleList(weightSpecs()) + "), got " + std::to_string(weights.size()));
  }
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    const WeightSpec& spec = weights_[i].spec;
    const WeightView view = i < weights.size() ? weights[i] : WeightView{};
    if (view.data == nullptr) {
      if (!spec.optional) {
        throw Error(name_ + ": configLayer needs the " + spec.role + " data (got null)");
      }
      const std::vector<float> zeros(elementCount(spec.shape), 0.0f);
      weights_[i].tensor->bind(zeros.data());
      continue;
    }
    checkExtent(name_, spec, view);
    weights_[i].tensor->bind(view.data);
  }
  configured_ = true;
}

void Layer::setForward(UnaryForward forward, const char* call) {
  unary_ = forward;
  binary_ = nullptr;
  forward_call_ = call;
}

void Layer::setForward(BinaryForward forward, const char* call) {
  binary_ = forward;
  unary_ = nullptr;
  forward_call_ = call;
}

cnmlStatus_t Layer::forward(cnrtQueue_t queue) {
  Tensor& a = *inputs_.at(0);
  cnmlStatus_t status;
  if (unary_ != nullptr) {
    status = unary_(op_, a.desc(), a.deviceData(), output_.desc(), output_.deviceData(), queue,
                    nullptr);
  } else if (binary_ != nullptr) {
    Tensor& b = *inputs_.at(1);
    status = binary_(op_, a.desc(), a.deviceData(), b.desc(), b.deviceData(), output_.desc(),
                     output_.deviceData(), queue, nullptr);
  } else {
    throw Error(name_ + ": the layer names no SDK forward (setForward in its constructor)");
  }
  check(status, name_, forward_call_);
  return status;
}

void Layer::compileOp(int mp) {
  if (fused_) {
    throw Error(name_ + ": cannot compile alone, the layer is fused into block " + fused_into_ +
                "; compile the block instead");
  }
  if (compiled_) throw Error(name_ + ": compileOp called twice; the layer is already compiled");
  checkConfigured("compileOp");
  checkCompile(cnmlCompileBaseOp(op_, CNML_MLU100, mp), name_, "cnmlCompileBaseOp", mp);
  compiled_ = true;
}

void Layer::run(cnrtQueue_t queue) {
  if (fused_) {
    throw Error(name_ + ": the layer is fused into block " + fused_into_ +
                " and cannot run alone; run the block instead");
  }
  if (!compiled_) throw Error(name_ + ": run before compile; call compileOp(mp) first");
  PZ_CHECK(name_, forward(queue));
}

void Layer::markFused(const std::string& block) {
  if (fused_) {
    throw Error(name_ + ": already fused into block " + fused_into_ +
                "; a layer can be fused into one block only, so it cannot join block " + block);
  }
  if (compiled_) {
    throw Error(name_ + ": already compiled alone, so it cannot be fused into block " + block +
                "; fuse layers before compiling them");
  }
  checkConfigured(("fusing into block " + block).c_str());
  fused_ = true;
  fused_into_ = block;
}

}  // namespace pz
