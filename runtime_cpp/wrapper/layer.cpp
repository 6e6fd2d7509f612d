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

Layer::Layer(std::string name, std::vector<Tensor*> inputs, Shape output_shape,
             ElementType output_type)
    : name_(std::move(name)),
      inputs_(std::move(inputs)),
      output_(name_, std::move(output_shape), output_type) {
  for (Tensor* input : inputs_) {
    if (input == nullptr) throw Error(name_ + ": null input tensor");
  }
  for (Tensor* input : inputs_) input->addConsumer();
}

Layer::~Layer() { destroyOps(); }

void Layer::destroyOps() {
  if (owned_ops_.empty()) {
    if (op_ != nullptr) cnmlDestroyBaseOp(&op_);
  } else {
    for (OwnedOp& owned : owned_ops_) cnmlDestroyBaseOp(&owned.op);
    owned_ops_.clear();
  }
  op_ = nullptr;
}

void Layer::addOp(cnmlBaseOp_t op, OpRunner run) {
  owned_ops_.push_back(OwnedOp{op, std::move(run)});
}

std::vector<cnmlBaseOp_t> Layer::ops() {
  op();
  if (owned_ops_.empty()) return {op_};
  std::vector<cnmlBaseOp_t> all;
  for (const OwnedOp& owned : owned_ops_) all.push_back(owned.op);
  return all;
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
  if (compiled_ || fused_) {
    throw Error(name_ + ": configLayer after the layer was compiled or fused; configure first");
  }
  // An op built before (for a device-model estimate) has no data; build it again with it.
  destroyOps();
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
    if (view.data == nullptr && !view.read) {
      if (!spec.optional) {
        throw Error(name_ + ": configLayer needs the " + spec.role + " data (got null)");
      }
      const std::vector<float> zeros(elementCount(spec.shape), 0.0f);
      weights_[i].tensor->bind(zeros.data());
      continue;
    }
    checkExtent(name_, spec, view);
    if (view.read)
      weights_[i].tensor->bindLater(view.read);
    else
      weights_[i].tensor->bind(view.data);
  }
  configured_ = true;
}

void Layer::loadWeights() {
  for (Weight& w : weights_) w.tensor->load();
}

void Layer::releaseHostWeights() {
  if (onHost()) return;
  for (Weight& w : weights_) w.tensor->releaseHost();
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
  if (!owned_ops_.empty()) {
    for (OwnedOp& owned : owned_ops_) PZ_CHECK(name_, owned.run(queue, invokeParam()));
    return CNML_STATUS_SUCCESS;
  }
  Tensor& a = *inputs_.at(0);
  cnmlStatus_t status;
  if (unary_ != nullptr) {
    status = unary_(op_, a.desc(), a.deviceData(), output_.desc(), output_.deviceData(), queue,
                    invokeParam());
  } else if (binary_ != nullptr) {
    Tensor& b = *inputs_.at(1);
    status = binary_(op_, a.desc(), a.deviceData(), b.desc(), b.deviceData(), output_.desc(),
                     output_.deviceData(), queue, invokeParam());
  } else {
    throw Error(name_ + ": the layer names no SDK forward (setForward in its constructor)");
  }
  check(status, name_, forward_call_);
  return status;
}

cnmlDataType_t storageType(Precision precision) {
  return precision == Precision::kFp32 ? CNML_DATA_FLOAT32 : CNML_DATA_FLOAT16;
}

namespace {

const char* dtypeName(cnmlDataType_t dtype) {
  return dtype == CNML_DATA_FLOAT16 ? "fp16" : dtype == CNML_DATA_FLOAT32 ? "fp32" : "another dtype";
}

}  // namespace

void Layer::allowInt8(const ConstTensor& filter) {
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    if (weights_[i].tensor.get() == &filter) int8_filter_ = static_cast<int>(i);
  }
  if (int8_filter_ < 0) throw Error(name_ + ": allowInt8 needs a weight declared by the layer");
}

void Layer::setSparse(bool sparse) {
  if (sparse == sparse_) return;
  if (sparse && !sparse_refusal_.empty()) throw Error(name_ + ": no sparse mode: " + sparse_refusal_);
  if (compiled_ || fused_) throw Error(name_ + ": its sparse mode cannot change after it was compiled or fused");
  destroyOps();  // an estimate built the op; rebuild it in the new mode
  sparse_ = sparse;
}

void Layer::setDataParallelism(int dp) {
  if (dp < 1) throw Error(name_ + ": data parallelism " + std::to_string(dp) + " is below 1");
  data_parallelism_ = dp;
}

void Layer::setAffinity(unsigned int cores) {
  affinity_ = cores;
  invoke_.affinity = cores != 0 ? &affinity_ : nullptr;
}

void Layer::setPrecision(Precision precision) {
  if (precision == precision_) return;
  if (compiled_ || fused_) {
    throw Error(name_ + ": its precision cannot change after it was compiled or fused");
  }
  destroyOps();  // an estimate built the op(s); rebuild at the new precision
  precision_ = precision;
}

Precision Layer::effectivePrecision() const {
  return precision_ == Precision::kInt8 && !hasInt8Mode() ? Precision::kFp16 : precision_;
}

void Layer::setQuantization(LayerQuantization quantization) {
  if (!hasInt8Mode()) {
    throw Error(name_ + ": the layer has no int8 mode, so it takes no quantisation parameters");
  }
  const Shape& filter = weights_[static_cast<std::size_t>(int8_filter_)].spec.shape;
  if (static_cast<int>(quantization.filter.size()) != filter.at(0)) {
    throw Error(name_ + ": " + std::to_string(quantization.filter.size()) +
                " filter quantisation parameters for " + std::to_string(filter.at(0)) +
                " output channels");
  }
  quantization_ = std::make_unique<LayerQuantization>(std::move(quantization));
}

void Layer::redirectInput(std::size_t index, Tensor& tensor) {
  if (op_ != nullptr) throw Error(name_ + ": inputs cannot change once its op is built");
  inputs_.at(index)->removeConsumer();
  inputs_.at(index) = &tensor;
  tensor.addConsumer();
}

void Layer::settleDataTypes() {
  const cnmlDataType_t dtype = storageType(effectivePrecision());
  output_.setDataType(dtype);
  for (Tensor* input : inputs_) {
    if (input->isInteger()) {
      throw Error(name_ + ": input " + input->name() + " holds " +
                  elementTypeName(input->elementType()) +
                  " values, which stay on the host: only host layers read it (convert it with a "
                  "host cast first)");
    }
    if (input->dataType() != dtype) {
      throw Error(name_ + ": computes in " + precisionName(effectivePrecision()) + " but input " +
                  input->name() + " is " + dtypeName(input->dataType()) +
                  "; compile the layer through a pz::Block, which inserts the cast");
    }
  }
}

cnmlBaseOp_t Layer::op() {
  if (op_ == nullptr) buildOp();
  return op_;
}

void Layer::buildOp() {
  if (!create_) throw Error(name_ + ": the layer defines no SDK op (defineOp in its constructor)");
  const Precision precision = effectivePrecision();
  if (precision == Precision::kInt8 && quantization_ == nullptr) {
    throw Error(name_ + ": computes in int8 but has no quantisation parameters; compile the "
                "model with --calibration CALIB.json (made by `paleozoic calibrate`), or give "
                "its block pz::Precision::kFp16");
  }
  settleDataTypes();
  // Built to compile (fused into its block, or alone): the op compiles once, and the SDK
  // may free the weights then. A host layer reads its own at run time.
  const bool hand_over = (fused_ || compiling_) && !onHost() && !readsHostWeights();
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    ConstTensor& weight = *weights_[i].tensor;
    if (precision == Precision::kInt8 && static_cast<int>(i) == int8_filter_) {
      weight.bindAs(CNML_DATA_INT8, &quantization_->filter, hand_over);
    } else {
      weight.bindAs(storageType(precision), nullptr, hand_over);
    }
  }
  try {
    create_();
  } catch (...) {
    destroyOps();  // ops a several-op layer added before the failure
    throw;
  }
  if (!owned_ops_.empty()) op_ = owned_ops_.front().op;
  if (precision == Precision::kInt8) {
    SdkHandle<cnmlQuantizedParam_t, cnmlDestroyQuantizedParam> param;
    PZ_CHECK(name_, cnmlCreateQuantizedParam(param.out(), quantization_->input.position,
                                             quantization_->input.scale, 0.0f));
    PZ_CHECK(name_, cnmlSetOperationComputingDataType(op_, in(0), CNML_DATA_INT8, param));
  }
}

void Layer::compileOp(int mp) {
  if (fused_) {
    throw Error(name_ + ": cannot compile alone, the layer is fused into block " + fused_into_ +
                "; compile the block instead");
  }
  if (compiled_) throw Error(name_ + ": compileOp called twice; the layer is already compiled");
  checkConfigured("compileOp");
  compiling_ = true;
  for (cnmlBaseOp_t each : ops()) {
    checkCompile(cnmlCompileBaseOp(each, CNML_MLU100, mp), name_, "cnmlCompileBaseOp", mp);
  }
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
  if (onHost()) {
    throw Error(name_ + ": a host layer computes on the CPU and cannot join the fusion op of block " +
                block + "; give it a block of its own (fuse = false)");
  }
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
