// A stage of a plan: blocks that run at once, each on cores of its own (the paper's
// ConcatLayer, Fig. 12, as concurrent blocks on disjoint core sets).
#ifndef PALEOZOIC_STAGE_H_
#define PALEOZOIC_STAGE_H_

#include <memory>
#include <string>
#include <vector>

#include "paleozoic/fusion.h"

namespace pz {

class Stage : private MovedIntoPlace {
 public:
  // `blocks`: compiled blocks of which none reads what another writes. Each is pinned to
  // consecutive cores from core 0 (data parallelism x MP of them, Block::setAffinity), so
  // they must fit the device's 32 together; pz::Error naming the stage otherwise. Set the
  // blocks' data parallelism before.
  Stage(std::string name, std::vector<Block*> blocks);
  ~Stage();
  Stage(Stage&&) noexcept;

  const std::string& name() const { return name_; }
  const std::vector<Block*>& blocks() const { return blocks_; }
  // Runs the blocks at once, each on a queue of its own, from as many lanes of host threads
  // as the host has cores (at most one per block): the calling thread and threads the stage
  // keeps (parked between runs), lane i running blocks i, i + lanes, ... in turn; all in the
  // calling thread's run context if any. Returns when all are done, rethrowing the first
  // error. Runs from several threads take turns, as a compiled op's forwards do.
  void run();
  // Device time of the last run: its longest block's.
  float lastDeviceMicros() const;

 private:
  struct Helpers;
  std::string name_;
  std::vector<Block*> blocks_;
  std::unique_ptr<Helpers> helpers_;
};

}  // namespace pz

#endif  // PALEOZOIC_STAGE_H_
