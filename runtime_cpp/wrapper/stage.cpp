// Stage: blocks run at once on disjoint cores, each from a thread and a queue of its own.
#include "paleozoic/stage.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "detail.h"
#include "paleozoic/run_context.h"

namespace pz {

Stage::Stage(std::string name, std::vector<Block*> blocks)
    : name_(std::move(name)), blocks_(std::move(blocks)) {
  int first = 0;
  for (Block* block : blocks_) {
    if (block == nullptr) throw Error("stage " + name_ + ": null block");
    const int cores = block->dataParallelism() * block->mp();
    if (first + cores > kMaxMp) {
      throw Error("stage " + name_ + ": its blocks need more than the device's " +
                  std::to_string(kMaxMp) + " cores (block " + block->name() + " would start at core " +
                  std::to_string(first) + " and take " + std::to_string(cores) +
                  "); lower their MPs so that they sum to at most " + std::to_string(kMaxMp));
    }
    const unsigned int all = cores >= 32 ? ~0u : (1u << cores) - 1u;
    block->setAffinity(all << first);
    first += cores;
  }
}

void Stage::run() {
  RunContext* context = RunContext::current();
  std::vector<std::exception_ptr> failed(blocks_.size());
  std::vector<std::thread> helpers;
  helpers.reserve(blocks_.size());
  for (std::size_t i = 1; i < blocks_.size(); ++i) {
    helpers.emplace_back([this, i, context, &failed] {
      const RunContext::Join joined(context);
      try {
        blocks_[i]->runBeside();
      } catch (...) {
        failed[i] = std::current_exception();
      }
    });
  }
  if (!blocks_.empty()) {
    try {
      blocks_[0]->runBeside();
    } catch (...) {
      failed[0] = std::current_exception();
    }
  }
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& error : failed)
    if (error) std::rethrow_exception(error);
}

float Stage::lastDeviceMicros() const {
  float longest = 0.0f;
  for (const Block* block : blocks_) longest = std::max(longest, block->lastDeviceMicros());
  return longest;
}

}  // namespace pz
