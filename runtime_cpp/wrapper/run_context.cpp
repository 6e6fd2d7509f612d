// RunContext: a session's memory, queue and timings for one of several concurrent runs.
#include "paleozoic/run_context.h"

#include "detail.h"

namespace pz {
namespace {

thread_local RunContext* bound = nullptr;

}  // namespace

RunContext::RunContext(const Arena* plan) {
  try {
    PZ_CHECK("run context", cnrtCreateQueue(&queue_));
    if (plan != nullptr && plan->bytes() > 0) {
      PZ_CHECK("run context arena", cnrtMalloc(&arena_, plan->bytes()));
      for (const Arena::Place& p : plan->places()) {
        if (p.tensor->hostOnly()) continue;  // no device buffer to place
        Tensor::Buffers& b = buffers_[p.tensor];
        b.data = static_cast<char*>(arena_) + p.offset;
        b.capacity = p.bytes;
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

RunContext::~RunContext() { release(); }

void RunContext::release() noexcept {
  for (auto& [tensor, b] : buffers_) {
    if (b.data != nullptr && b.capacity == 0) cnrtFree(b.data);  // allocated on first use
  }
  buffers_.clear();
  if (arena_ != nullptr) cnrtFree(arena_);
  arena_ = nullptr;
  for (auto& [block, timing] : timings_) timing.release();
  timings_.clear();
  if (queue_ != nullptr) cnrtDestroyQueue(queue_);
  queue_ = nullptr;
}

void RunContext::run(const std::function<void()>& f) {
  if (bound != nullptr) {
    throw Error("RunContext::run: this thread is already running a context; run one at a "
                "time per thread");
  }
  struct Binding {  // unbinds however f() ends
    explicit Binding(RunContext* context) { bound = context; }
    ~Binding() { bound = nullptr; }
  } binding(this);
  f();
}

RunContext* RunContext::current() { return bound; }

RunContext::Join::Join(RunContext* context) { bound = context; }

RunContext::Join::~Join() { bound = nullptr; }

void BlockTiming::release() noexcept {
  if (start != nullptr) cnrtDestroyNotifier(&start);
  if (end != nullptr) cnrtDestroyNotifier(&end);
  if (own_queue != nullptr) cnrtDestroyQueue(own_queue);
  start = end = nullptr;
  own_queue = nullptr;
}

}  // namespace pz
