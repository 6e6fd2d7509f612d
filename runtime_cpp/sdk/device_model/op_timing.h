// The simulated time of a compiled op's forward under each Launch (device_model.h).
#ifndef PZ_SDK_OP_TIMING_H_
#define PZ_SDK_OP_TIMING_H_

#include <map>
#include <utility>
#include <vector>

#include "device_model.h"

namespace pz_sdk {

// The op's work, kept from compile (a base op's one layer, or a fusion op's graph), priced
// on the mock's current profile (op_cost.cpp). Times at the whole chip's DRAM are computed
// once per data parallelism, at compile; a pinned launch's (a stage's block) on its first
// forward, kept for the next: us() is called under the op's forward lock, one at a time.
class OpTiming {
 public:
  OpTiming() = default;
  OpTiming(std::vector<GraphLayer> graph, int mp, bool fused);
  int mp() const { return mp_; }
  // Data parallelism 1 .. the device's cores / mp, as compiled.
  int maxDataParallelism() const { return static_cast<int>(by_dp_.size()); }
  double us(const Launch& launch = Launch()) const;

 private:
  double price(const Launch& launch) const;
  std::vector<GraphLayer> graph_;
  int mp_ = 1;
  bool fused_ = false;
  std::vector<double> by_dp_;  // [dp - 1] at the whole chip's DRAM
  mutable std::map<std::pair<int, double>, double> pinned_;  // (dp, DRAM share) -> us
};

}  // namespace pz_sdk

#endif  // PZ_SDK_OP_TIMING_H_
