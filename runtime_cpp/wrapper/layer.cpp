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

void Layer::checkConfigured(bool ok, const char* what) const {
  if (!ok) {
    throw Error(name_ + ": configLayer was not called before " + what +
                "; bind the layer's weights with configLayer first");
  }
}

void Layer::compileOp(int mp) {
  if (fused_) {
    throw Error(name_ + ": cannot compile alone, the layer is fused into block " + fused_into_ +
                "; compile the block instead");
  }
  if (compiled_) throw Error(name_ + ": compileOp called twice; the layer is already compiled");
  checkConfigured(configured(), "compileOp");
  checkCompile(cnmlCompileBaseOp(op_, CNML_MLU100, mp), name_, "cnmlCompileBaseOp", mp);
  compiled_ = true;
}

void Layer::run(cnrtQueue_t queue) {
  if (fused_) {
    throw Error(name_ + ": the layer is fused into block " + fused_into_ +
                " and cannot run alone; run the block instead");
  }
  if (!compiled_) throw Error(name_ + ": run before compile; call compileOp(mp) first");
  check(forward(queue), name_, "forward");
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
  checkConfigured(configured(), ("fusing into block " + block).c_str());
  fused_ = true;
  fused_into_ = block;
}

}  // namespace pz
