// Fusion: which tensors leave a block, the SDK fusion op over layers, and the plan's F-Block.
#ifndef PALEOZOIC_FUSION_H_
#define PALEOZOIC_FUSION_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "paleozoic/core.h"
#include "paleozoic/run_context.h"

namespace pz {

// Which tensors cross the edge of a block of layers (given in topological order): inputs
// are read inside and produced outside, in first-read order; outputs are produced inside
// and read outside it, read by nobody (the end of a branch) or graph outputs, in layer
// order. FusionLayer, the device-model bindings and Python's paleozoic.ir.boundary all
// follow this one rule (tests/ir/test_boundary.py checks the two languages agree).
struct BlockBoundary {
  std::vector<Tensor*> inputs, outputs;
};
BlockBoundary fusionBoundary(const std::vector<Layer*>& layers);
// The output rule alone, for a tensor its block's layers read `reads_inside` times.
bool leavesBlock(const Tensor& produced, int reads_inside);

// Layers fused into one SDK fusion op, with I/O derived at compile time by fusionBoundary.
class FusionLayer {
 public:
  explicit FusionLayer(std::string name);
  ~FusionLayer();
  FusionLayer(const FusionLayer&) = delete;
  FusionLayer& operator=(const FusionLayer&) = delete;

  const std::string& name() const { return name_; }
  void fuseLayer(Layer& layer);       // topological order
  void compileFusionOp(int mp);       // 1..32
  void run(cnrtQueue_t queue);
  // As Layer::setDataParallelism and setAffinity, for the fusion op's forward.
  void setDataParallelism(int dp);
  void setAffinity(unsigned int cores);
  const std::vector<Tensor*>& fusionInputs() const { return inputs_; }
  const std::vector<Tensor*>& fusionOutputs() const { return outputs_; }

 private:
  std::string name_;
  cnmlFusionOp_t op_ = nullptr;
  std::vector<Layer*> layers_;
  std::vector<Tensor*> inputs_, outputs_;
  bool compiled_ = false;
  int data_parallelism_ = 1;
  unsigned int affinity_ = 0;
  cnrtInvokeFuncParam_t invoke_{&data_parallelism_, nullptr, CNRT_PARAM_END};
};

// Converts a tensor between fp32 and fp16 storage. Block::compile inserts one where a layer
// reads a tensor stored in another dtype than its precision computes in; it runs (and is
// timed) inside that block.
class CastLayer : public Layer {
 public:
  CastLayer(std::string name, Tensor& input, cnmlDataType_t to);

 protected:
  void settleDataTypes() override;

 private:
  cnmlDataType_t to_;
};

// The three knobs of one F-Block, as named constants at the top of an emitted session.
struct BlockKnobs {
  bool fuse;  // compile the block's layers into one fusion op
  int mp;     // cores the block is compiled for, 1..32
  Precision precision = Precision::kFp32;
};

// One F-Block of the plan: fused into a FusionLayer when `fuse` is true, otherwise each
// layer compiled alone with the block's MP, all at the block's precision unless a layer is
// given its own. Times itself with CNRT notifiers.
class Block : private MovedIntoPlace {
 public:
  Block(std::string name, const BlockKnobs& knobs, std::vector<Layer*> layers);
  Block(std::string name, bool fuse, int mp, std::vector<Layer*> layers,
        Precision precision = Precision::kFp32);
  ~Block();
  Block(Block&&) noexcept;

  const std::string& name() const { return name_; }
  bool fuse() const { return fuse_; }
  int mp() const { return mp_; }
  Precision precision() const { return precision_; }
  // A layer of this block computed in another precision than the block's; before compile.
  void setLayerPrecision(const Layer& layer, Precision precision);
  // Sets each layer's precision, inserts the casts its inputs need, then fuses or compiles.
  void compile();
  // After compile: frees the host copies of weights the SDK holds (Layer::releaseHostWeights).
  void releaseHostWeights();
  // Data parallelism of the block's forwards (Layer::setDataParallelism): the batch runs as
  // `dp` groups of frames at once, each on the block's MP cores; dp x MP at most 32. Before
  // or after compile.
  void setDataParallelism(int dp);
  int dataParallelism() const { return data_parallelism_; }
  // Synchronises the queue and records device time; inside RunContext::run, on the
  // context's queue (not `queue`) and into the context.
  void run(cnrtQueue_t queue);
  // Runs on a queue of its own (one per block, per run context), as a Stage runs the blocks
  // it runs at once, each from a thread of its own.
  void runBeside();
  // The cores the block's forwards are pinned to (cnrtInvokeFuncParam_t::affinity, a mask;
  // 0: no mask, the whole chip), as a Stage gives each of its blocks cores of its own.
  void setAffinity(unsigned int cores);
  unsigned int affinity() const { return affinity_; }
  // Load balance's channel placement (cnrtSetCurrentChannel, MLU100): the block's forwards
  // are issued from a thread placed on this DDR channel, which takes effect at MP 1 (the
  // forward's memory on that channel only); the thread is back on no channel after them.
  // CNRT_CHANNEL_TYPE_NONE (the default): no placement.
  void setChannel(cnrtChannelType_t channel);
  cnrtChannelType_t channel() const { return channel_; }
  float lastDeviceMicros() const;  // of the last run (in the calling thread's context)
  // The layers as compiled and run, casts included.
  const std::vector<Layer*>& sequence() const { return sequence_; }

 private:
  Precision precisionOf(const Layer& layer) const;

  std::string name_;
  bool fuse_;
  int mp_;
  Precision precision_;
  std::vector<Layer*> layers_;
  std::unordered_map<const Layer*, Precision> layer_precision_;
  std::vector<std::unique_ptr<CastLayer>> casts_;
  std::vector<Layer*> sequence_;
  std::unique_ptr<FusionLayer> fusion_;
  void runOn(cnrtQueue_t queue, BlockTiming& timing);
  BlockTiming& timingHere();  // this thread's run context's, or the block's own

  int data_parallelism_ = 1;
  unsigned int affinity_ = 0;
  cnrtChannelType_t channel_ = CNRT_CHANNEL_TYPE_NONE;
  BlockTiming timing_;
};

}  // namespace pz

#endif  // PALEOZOIC_FUSION_H_
