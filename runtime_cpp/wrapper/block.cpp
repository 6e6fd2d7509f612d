// Block: one F-Block of the plan, fused or compiled layer by layer, timed with notifiers.
#include "detail.h"

namespace pz {

Block::Block(std::string name, bool fuse, int mp, std::vector<Layer*> layers)
    : name_(std::move(name)), fuse_(fuse), mp_(mp), layers_(std::move(layers)) {
  for (Layer* layer : layers_) {
    if (layer == nullptr) throw Error("block " + name_ + ": null layer");
  }
}

Block::~Block() {
  if (start_ != nullptr) cnrtDestroyNotifier(&start_);
  if (end_ != nullptr) cnrtDestroyNotifier(&end_);
}

Block::Block(Block&& other) noexcept
    : name_(std::move(other.name_)),
      fuse_(other.fuse_),
      mp_(other.mp_),
      layers_(std::move(other.layers_)),
      fusion_(std::move(other.fusion_)),
      start_(other.start_),
      end_(other.end_),
      last_us_(other.last_us_) {
  other.start_ = nullptr;
  other.end_ = nullptr;
}

void Block::compile() {
  if (layers_.empty()) throw Error("block " + name_ + ": has no layers to compile");
  if (!fuse_) {
    for (Layer* layer : layers_) layer->compileOp(mp_);
    return;
  }
  if (fusion_) throw Error("block " + name_ + ": compile called twice; it is already compiled");
  auto fusion = std::make_unique<FusionLayer>(name_);
  for (Layer* layer : layers_) fusion->fuseLayer(*layer);
  fusion->compileFusionOp(mp_);
  fusion_ = std::move(fusion);
}

void Block::run(cnrtQueue_t queue) {
  if (fuse_ && !fusion_) throw Error("block " + name_ + ": run before compile; call compile()");
  if (start_ == nullptr) PZ_CHECK(name_, cnrtCreateNotifier(&start_));
  if (end_ == nullptr) PZ_CHECK(name_, cnrtCreateNotifier(&end_));
  PZ_CHECK(name_, cnrtPlaceNotifier(start_, queue));
  if (fuse_) {
    fusion_->run(queue);
  } else {
    for (Layer* layer : layers_) layer->run(queue);
  }
  PZ_CHECK(name_, cnrtPlaceNotifier(end_, queue));
  PZ_CHECK(name_, cnrtSyncQueue(queue));
  PZ_CHECK(name_, cnrtNotifierDuration(start_, end_, &last_us_));
}

}  // namespace pz
