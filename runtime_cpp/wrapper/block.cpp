// Block: one F-Block of the plan, fused or compiled layer by layer at its precision, with
// the casts its precision boundaries need, timed with notifiers.
#include <algorithm>

#include "detail.h"
#include "paleozoic/run_context.h"

namespace pz {

CastLayer::CastLayer(std::string name, Tensor& input, cnmlDataType_t to)
    : Layer(std::move(name), {&input}, input.shape()), to_(to) {
  const cnmlCastType_t cast =
      to == CNML_DATA_FLOAT16 ? CNML_CAST_FLOAT32_TO_FLOAT16 : CNML_CAST_FLOAT16_TO_FLOAT32;
  defineOp([this, cast] { PZ_CHECK(name_, cnmlCreateCastOp(&op_, cast, in(0), output_.desc())); });
  PZ_FORWARD(cnmlComputeCastOpForward_V4);
}

void CastLayer::settleDataTypes() { output_.setDataType(to_); }

Block::Block(std::string name, const BlockKnobs& knobs, std::vector<Layer*> layers)
    : Block(std::move(name), knobs.fuse, knobs.mp, std::move(layers), knobs.precision) {}

Block::Block(std::string name, bool fuse, int mp, std::vector<Layer*> layers, Precision precision)
    : name_(std::move(name)),
      fuse_(fuse),
      mp_(mp),
      precision_(precision),
      layers_(std::move(layers)) {
  for (Layer* layer : layers_) {
    if (layer == nullptr) throw Error("block " + name_ + ": null layer");
  }
}

Block::~Block() { timing_.release(); }

Block::Block(Block&& other) noexcept
    : name_(std::move(other.name_)),
      fuse_(other.fuse_),
      mp_(other.mp_),
      precision_(other.precision_),
      layers_(std::move(other.layers_)),
      layer_precision_(std::move(other.layer_precision_)),
      casts_(std::move(other.casts_)),
      sequence_(std::move(other.sequence_)),
      fusion_(std::move(other.fusion_)),
      data_parallelism_(other.data_parallelism_),
      affinity_(other.affinity_),
      channel_(other.channel_),
      timing_(other.timing_) {
  other.timing_ = BlockTiming();
}

void Block::setLayerPrecision(const Layer& layer, Precision precision) {
  if (std::find(layers_.begin(), layers_.end(), &layer) == layers_.end()) {
    throw Error("block " + name_ + ": setLayerPrecision names " + layer.name() +
                ", which is not one of its layers");
  }
  if (!sequence_.empty()) throw Error("block " + name_ + ": setLayerPrecision after compile");
  layer_precision_[&layer] = precision;
}

Precision Block::precisionOf(const Layer& layer) const {
  const auto it = layer_precision_.find(&layer);
  return it == layer_precision_.end() ? precision_ : it->second;
}

void Block::releaseHostWeights() {
  for (Layer* layer : sequence_) layer->releaseHostWeights();
}

void Block::compile() {
  if (layers_.empty()) throw Error("block " + name_ + ": has no layers to compile");
  if (!sequence_.empty()) {
    throw Error("block " + name_ + ": compile called twice; it is already compiled");
  }
  // Every output's dtype first, so that a layer reading one produced earlier in the block
  // sees what it will be. Weights read at compile are read as each op is built (one
  // layer's at a time beside what the SDK holds), a host layer's now: it reads them as it runs.
  for (Layer* layer : layers_) {
    if (layer->onHost()) layer->loadWeights();
    layer->setPrecision(precisionOf(*layer));
    // A host layer's output keeps its own type (float32, or an integer type).
    if (!layer->onHost()) layer->output().setDataType(storageType(layer->effectivePrecision()));
  }
  std::vector<Layer*> sequence;
  std::unordered_map<const Tensor*, CastLayer*> cast_of;
  for (Layer* layer : layers_) {
    const cnmlDataType_t wanted = storageType(layer->effectivePrecision());
    for (std::size_t i = 0; i < layer->inputs().size(); ++i) {
      Tensor& input = *layer->inputs()[i];
      // A host layer reads fp16 as well as fp32; integer inputs (indices) are never cast.
      if (layer->onHost() || input.isInteger() || input.dataType() == wanted) continue;
      // A graph input with a data-preprocess strategy comes in the block's dtype: the host
      // or the fusion op's edge converts it, not a cast layer.
      if (input.hasDataPreprocessStrategy() && !input.hasDeviceData()) {
        if (!fuse_) {
          throw Error("block " + name_ + ": input " + input.name() +
                      " has a data-preprocess strategy, which only a fused block's inputs "
                      "take; fuse the block or drop the strategy");
        }
        if (input.dataPreprocessApplied()) {
          throw Error("block " + name_ + ": input " + input.name() +
                      " with a data-preprocess strategy is read by blocks of different "
                      "precisions; give them one precision or drop the strategy");
        }
        input.setDataType(wanted);
        continue;
      }
      CastLayer*& cast = cast_of[&input];
      if (cast == nullptr) {
        casts_.push_back(std::make_unique<CastLayer>(name_ + "_cast_" + input.name(), input, wanted));
        cast = casts_.back().get();
        sequence.push_back(cast);
      }
      layer->redirectInput(i, cast->output());
    }
    sequence.push_back(layer);
  }
  sequence_ = sequence;
  // A block of one host layer (each has a block of its own) has nothing to fuse.
  if (layers_.size() == 1 && layers_[0]->onHost()) fuse_ = false;
  for (Layer* layer : layers_) {
    if (!fuse_ && layer->output().hasDataPreprocessStrategy()) {
      throw Error("block " + name_ + ": output " + layer->output().name() +
                  " has a data-preprocess strategy, which only a fused block's outputs take; "
                  "fuse the block or drop the strategy");
    }
  }
  if (!fuse_) {
    for (Layer* layer : sequence_) layer->compileOp(mp_);
  } else {
    auto fusion = std::make_unique<FusionLayer>(name_);
    for (Layer* layer : sequence_) fusion->fuseLayer(*layer);
    fusion->compileFusionOp(mp_);
    fusion_ = std::move(fusion);
  }
  setDataParallelism(data_parallelism_);  // the casts added above run with the block too
  setAffinity(affinity_);
}

void Block::setChannel(cnrtChannelType_t channel) {
  if (channel < CNRT_CHANNEL_TYPE_NONE || channel > CNRT_CHANNEL_TYPE_3) {
    throw Error("block " + name_ + ": DDR channel " + std::to_string(channel) +
                " is not one of 0..3 (or CNRT_CHANNEL_TYPE_NONE)");
  }
  channel_ = channel;
}

void Block::setAffinity(unsigned int cores) {
  affinity_ = cores;
  for (Layer* layer : sequence_.empty() ? layers_ : sequence_) layer->setAffinity(cores);
  if (fusion_) fusion_->setAffinity(cores);
}

void Block::setDataParallelism(int dp) {
  if (dp < 1 || dp * mp_ > kMaxMp) {
    throw Error("block " + name_ + ": data parallelism " + std::to_string(dp) + " x MP " +
                std::to_string(mp_) + " does not fit the device's " + std::to_string(kMaxMp) +
                " cores; lower the data parallelism or the block's MP");
  }
  data_parallelism_ = dp;
  for (Layer* layer : sequence_.empty() ? layers_ : sequence_) layer->setDataParallelism(dp);
  if (fusion_) fusion_->setDataParallelism(dp);
}

void Block::run(cnrtQueue_t queue) {
  // Inside a RunContext the block runs on the context's queue and times itself there, so
  // that concurrent runs neither share a clock nor write the same timing.
  RunContext* context = RunContext::current();
  runOn(context != nullptr ? context->queue() : queue, timingHere());
}

void Block::runBeside() {
  BlockTiming& timing = timingHere();
  if (timing.own_queue == nullptr) PZ_CHECK(name_, cnrtCreateQueue(&timing.own_queue));
  runOn(timing.own_queue, timing);
}

BlockTiming& Block::timingHere() {
  RunContext* context = RunContext::current();
  return context != nullptr ? context->timingOf(this) : timing_;
}

void Block::runOn(cnrtQueue_t queue, BlockTiming& timing) {
  if (sequence_.empty() || (fuse_ && !fusion_)) {
    throw Error("block " + name_ + ": run before compile; call compile()");
  }
  if (timing.start == nullptr) PZ_CHECK(name_, cnrtCreateNotifier(&timing.start));
  if (timing.end == nullptr) PZ_CHECK(name_, cnrtCreateNotifier(&timing.end));
  PZ_CHECK(name_, cnrtPlaceNotifier(timing.start, queue));
  if (channel_ != CNRT_CHANNEL_TYPE_NONE) PZ_CHECK(name_, cnrtSetCurrentChannel(channel_));
  try {
    if (fuse_) {
      fusion_->run(queue);
    } else {
      for (Layer* layer : sequence_) layer->run(queue);
    }
  } catch (...) {
    if (channel_ != CNRT_CHANNEL_TYPE_NONE) cnrtSetCurrentChannel(CNRT_CHANNEL_TYPE_NONE);
    throw;
  }
  if (channel_ != CNRT_CHANNEL_TYPE_NONE) {
    PZ_CHECK(name_, cnrtSetCurrentChannel(CNRT_CHANNEL_TYPE_NONE));
  }
  PZ_CHECK(name_, cnrtPlaceNotifier(timing.end, queue));
  PZ_CHECK(name_, cnrtSyncQueue(queue));
  PZ_CHECK(name_, cnrtNotifierDuration(timing.start, timing.end, &timing.us));
}

float Block::lastDeviceMicros() const {
  RunContext* context = RunContext::current();
  return context != nullptr ? context->timingOf(this).us : timing_.us;
}

}  // namespace pz
