// FusionLayer: several base ops compiled into one SDK fusion op, I/O derived from the graph.
#include <algorithm>

#include "detail.h"

namespace pz {
namespace {

bool contains(const std::vector<Tensor*>& list, const Tensor* t) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

}  // namespace

bool leavesBlock(const Tensor& produced, int reads_inside) {
  return produced.consumers() > reads_inside || produced.consumers() == 0 ||
         produced.isGraphOutput();
}

BlockBoundary fusionBoundary(const std::vector<Layer*>& layers) {
  BlockBoundary boundary;
  std::vector<Tensor*> produced;
  for (Layer* layer : layers) produced.push_back(&layer->output());
  for (Layer* layer : layers) {
    for (Tensor* in : layer->inputs()) {
      if (!contains(produced, in) && !contains(boundary.inputs, in)) boundary.inputs.push_back(in);
    }
  }
  for (Tensor* out : produced) {
    int reads_inside = 0;
    for (Layer* layer : layers) {
      reads_inside +=
          static_cast<int>(std::count(layer->inputs().begin(), layer->inputs().end(), out));
    }
    if (leavesBlock(*out, reads_inside)) boundary.outputs.push_back(out);
  }
  return boundary;
}

FusionLayer::FusionLayer(std::string name) : name_(std::move(name)) {
  PZ_CHECK(name_, cnmlCreateFusionOp(&op_));
}

FusionLayer::~FusionLayer() {
  if (op_ != nullptr) cnmlDestroyFusionOp(&op_);
}

void FusionLayer::fuseLayer(Layer& layer) {
  if (compiled_) {
    throw Error(name_ + ": cannot fuse " + layer.name() +
                " into a block that is already compiled; fuse every layer before compiling");
  }
  layer.markFused(name_);
  for (cnmlBaseOp_t each : layer.ops()) PZ_CHECK(layer.name(), cnmlFuseOp(each, op_));
  layers_.push_back(&layer);
}

void FusionLayer::compileFusionOp(int mp) {
  if (compiled_) throw Error(name_ + ": compileFusionOp called twice; the block is compiled");
  if (layers_.empty()) throw Error(name_ + ": no layers fused; call fuseLayer before compiling");
  BlockBoundary boundary = fusionBoundary(layers_);
  inputs_ = std::move(boundary.inputs);
  outputs_ = std::move(boundary.outputs);
  std::vector<cnmlTensor_t> in_descs, out_descs;
  for (Tensor* t : inputs_) in_descs.push_back(t->desc());
  for (Tensor* t : outputs_) out_descs.push_back(t->desc());
  // Load balance: the SDK takes a strategy on fusion I/O, before the I/O is set.
  for (Tensor* t : inputs_) t->applyDataPreprocessStrategy();
  for (Tensor* t : outputs_) t->applyDataPreprocessStrategy();
  PZ_CHECK(name_, cnmlSetFusionIO(op_, in_descs.data(), static_cast<int>(in_descs.size()),
                                  out_descs.data(), static_cast<int>(out_descs.size())));
  checkCompile(cnmlCompileFusionOp(op_, CNML_MLU100, mp), name_, "cnmlCompileFusionOp", mp);
  compiled_ = true;
}

void FusionLayer::run(cnrtQueue_t queue) {
  if (!compiled_) throw Error(name_ + ": run before compile; call compileFusionOp(mp) first");
  std::vector<cnmlTensor_t> in_descs, out_descs;
  std::vector<void*> in_data, out_data;
  for (Tensor* t : inputs_) {
    in_descs.push_back(t->desc());
    in_data.push_back(t->deviceData());
  }
  for (Tensor* t : outputs_) {
    out_descs.push_back(t->desc());
    out_data.push_back(t->deviceData());
  }
  PZ_CHECK(name_, cnmlComputeFusionOpForward_V4(op_, in_descs.data(), in_data.data(),
                                                static_cast<int>(in_descs.size()), out_descs.data(),
                                                out_data.data(), static_cast<int>(out_descs.size()),
                                                queue,
                                                data_parallelism_ > 1 || affinity_ != 0
                                                    ? &invoke_
                                                    : nullptr));
}

void FusionLayer::setAffinity(unsigned int cores) {
  affinity_ = cores;
  invoke_.affinity = cores != 0 ? &affinity_ : nullptr;
}

void FusionLayer::setDataParallelism(int dp) {
  if (dp < 1) throw Error(name_ + ": data parallelism " + std::to_string(dp) + " is below 1");
  data_parallelism_ = dp;
}

}  // namespace pz
