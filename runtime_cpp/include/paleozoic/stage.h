// A stage of a plan: blocks that run at once, each on cores of its own (the paper's
// ConcatLayer, Fig. 12, as concurrent blocks on disjoint core sets).
#ifndef PALEOZOIC_STAGE_H_
#define PALEOZOIC_STAGE_H_

#include <string>
#include <vector>

#include "paleozoic/fusion.h"

namespace pz {

class Stage {
 public:
  // `blocks`: compiled blocks of which none reads what another writes. Each is pinned to
  // consecutive cores from core 0 (data parallelism x MP of them, Block::setAffinity), so
  // they must fit the device's 32 together; pz::Error naming the stage otherwise. Set the
  // blocks' data parallelism before.
  Stage(std::string name, std::vector<Block*> blocks);

  const std::string& name() const { return name_; }
  const std::vector<Block*>& blocks() const { return blocks_; }
  // Runs the blocks at once: the first on the calling thread, every other on a thread of
  // its own, each on a queue of its own (in the calling thread's run context, if any);
  // returns when all are done, rethrowing the first error.
  void run();
  // Device time of the last run: its longest block's.
  float lastDeviceMicros() const;

 private:
  std::string name_;
  std::vector<Block*> blocks_;
};

}  // namespace pz

#endif  // PALEOZOIC_STAGE_H_
