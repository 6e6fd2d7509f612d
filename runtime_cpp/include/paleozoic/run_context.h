// Several runs of one session at once: the compiled blocks (the SDK's ops, which hold the
// weights) are shared, and each run has its own activation memory, queue and timings.
#ifndef PALEOZOIC_RUN_CONTEXT_H_
#define PALEOZOIC_RUN_CONTEXT_H_

#include <cnrt.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "paleozoic/core.h"

namespace pz {

class Block;

// Where a block's forward is timed: its notifiers, a queue of its own for when it runs
// beside other blocks (a Stage), and the device time of its last run.
struct BlockTiming {
  cnrtNotifier_t start = nullptr, end = nullptr;
  cnrtQueue_t own_queue = nullptr;
  float us = 0.0f;
  void release() noexcept;
};

// The run-time state of one session over blocks compiled once: an arena laid out as the
// session's (the same memory plan), buffers for the tensors the plan does not place, the
// integer tensors' values, a queue and the blocks' device times.
//
// Inside run(), everything the calling thread does with the session's tensors (loading
// inputs, the blocks' forwards, reading outputs) uses this context's memory, and blocks run
// on its queue. Contexts over the same blocks run concurrently on different threads, and
// their outputs are bit-identical to a serial run: the SDK lets one forward of a compiled
// op run at a time, so concurrent sessions pipeline through the model op by op while the
// weights are held once. The binding is per thread because the layers' forwards (hand-
// written ones too) reach their buffers through their tensors.
class RunContext {
 public:
  // `plan`: the session's arena, whose layout this context repeats in memory of its own;
  // null for a session without a memory plan (every tensor then gets a buffer on first use).
  explicit RunContext(const Arena* plan = nullptr);
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  // Runs `f` with this context bound to the calling thread. One thread at a time per
  // context; pz::Error when the thread is already inside a context's run().
  void run(const std::function<void()>& f);
  cnrtQueue_t queue() const { return queue_; }

  // The context bound to the calling thread, or null outside run().
  static RunContext* current();

  // Binds a helper thread of a run (a Stage runs its blocks on several) to `context` (may
  // be null: no context) for its lifetime.
  class Join {
   public:
    explicit Join(RunContext* context);
    ~Join();
    Join(const Join&) = delete;
    Join& operator=(const Join&) = delete;
  };

 private:
  friend class Tensor;
  friend class Block;
  // Several threads of one run (a Stage's blocks) reach the maps at once: lookups and first
  // uses are serialised; the entries themselves do not move.
  Tensor::Buffers& buffersOf(const Tensor& tensor) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return buffers_[&tensor];
  }
  BlockTiming& timingOf(const Block* block) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return timings_[block];
  }
  void release() noexcept;

  void* arena_ = nullptr;
  std::unordered_map<const Tensor*, Tensor::Buffers> buffers_;
  cnrtQueue_t queue_ = nullptr;
  std::unordered_map<const Block*, BlockTiming> timings_;
  std::mutex mutex_;
};

}  // namespace pz

#endif  // PALEOZOIC_RUN_CONTEXT_H_
