// The fusion op behind cnmlFusionOp_t, shared by its entry points (fusion.cpp) and the
// compile's step preparation (fusion_steps.cpp).
#ifndef PZ_SDK_FUSION_OP_H_
#define PZ_SDK_FUSION_OP_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/aligned_buffer.h"
#include "executor.h"

namespace pz_sdk {

// Where an operand's data lives at forward time.
struct Slot {
  enum Kind { kInput, kOutput, kScratch } kind;
  int index;  // into the forward's inputs / outputs, or the fusion's scratch values
};

}  // namespace pz_sdk

struct cnmlFusionOp {
  std::vector<pz_sdk::OpDesc> ops;
  bool io_set = false;
  // The I/O as the ops see it: after compile, an MLU-priority input or output (data-
  // preprocess strategy) is its host form here, converted by a cast the SDK adds.
  std::vector<pz_sdk::Operand> inputs, outputs;
  // The I/O as cnmlSetFusionIO was given it, each tensor's strategy then (-1: none) and the
  // dtype of the buffer a forward passes for it (TensorImpl::transferType).
  std::vector<pz_sdk::Operand> io_inputs, io_outputs;
  std::vector<int> in_strategy, out_strategy;
  std::vector<cnmlDataType_t> in_transfer, out_transfer;
  // Once compiled: ops[input_casts, input_casts + fused_ops) are the caller's (fuse order),
  // the others the casts of MLU-priority I/O (addEdgeCasts).
  std::size_t input_casts = 0, fused_ops = 0;
  bool compiled = false;
  // Compiled with its preparation deferred (cnmlMockSetDeferredPreparation): the steps, their
  // links and the arena are made, on `threads`, by the first forward that computes.
  bool deferred = false;
  int threads = 1;
  // One step per op, or per chain of ops the backend merges (compute_backend.h).
  std::vector<std::unique_ptr<pz_sdk::PreparedOp>> prepared;
  std::vector<std::vector<pz_sdk::Slot>> in_slots, out_slots;  // per op, then per step
  // Scratch values: sizes in floats (enough for any dtype), then each one's offset in the
  // arena once the steps are known.
  std::vector<std::size_t> scratch_sizes, scratch_offsets;
  // Per scratch value: 1 when it passes between backend steps in the producer's own memory
  // only (backendSkipDense): its dense buffer takes no bytes, and the steps get null for it.
  std::vector<char> scratch_unused;
  // Per step: the backend's buffers it shares with other steps (BackendOp::Held), placed in
  // the arena beside the scratch values.
  std::vector<std::vector<pz_sdk::BackendOp::Held>> held;
  pz_sdk::AlignedBuffer arena;
  pz_sdk::OpTiming timing;  // as cnmlBaseOp's
  // Per step: 1 when it runs beside the next one (two independent recurrent ops, the two
  // directions of a layer, each on one of the fusion's threads).
  std::vector<char> beside_next;
  std::vector<std::size_t> step_of;  // per op (fuse order): the step that runs it
  // Per op (fuse order): what computes it once compiled (implementationOf its step).
  std::shared_ptr<std::vector<std::string>> implementations =
      std::make_shared<std::vector<std::string>>();
  // Held while a forward runs: the arena and the steps' buffers (a backend's links between
  // them) serve one forward at a time, so sessions sharing the op take turns on it.
  std::mutex running;
};

namespace pz_sdk {

// Prepares the steps: runs of ops that the backend merges (each reading the previous one's
// only output, a scratch buffer nothing else reads; or ops that gate it, x * g(x), where
// g's first op and the Mul read it) become one step, whose inputs are the first op's and
// then each later op's inputs that the step does not compute itself.
void prepareSteps(cnmlFusionOp& f, int threads);

// Also fills what computes each op (cnmlMockOpImplementation).
// A recurrent op runs on one thread at small sizes (executor.cpp: a barrier per time step
// costs more than the step); two of them that do not read each other, the directions of a
// bidirectional layer, then run side by side when the fusion has two threads or more, as
// onnxruntime runs its directions (the LSTM export: two oneDNN primitives of 0.14 ms each).
void pairRecurrentSteps(cnmlFusionOp& f, int threads);

// Places the scratch values the steps pass in one arena, with the backend's buffers that
// steps share (BackendOp::Held): a value lives from the step that writes it to the last step
// that reads it, a held buffer from the first step using it to the last (two steps run side
// by side count as one), and what is alive at the same time never shares bytes; largest
// first, each at the lowest offset that fits (greedy by size, as the session's own plan).
// Values a merged step computes and reads itself take no bytes, nor those the steps pass in
// the backend's buffers only.
void placeScratch(cnmlFusionOp& f);

// All of the above on f.threads, then the fused ops' list keeps their metadata only; the op
// is no longer deferred.
void prepareFusion(cnmlFusionOp& f);

}  // namespace pz_sdk

#endif  // PZ_SDK_FUSION_OP_H_
