// Stage: blocks run at once on disjoint cores, each on a queue of its own, from lanes of
// host threads. The threads are kept between runs: starting them each forward costs more
// than a small Inception branch takes. There are no more lanes than host cores: on the CPU
// SDKs a block's MP is host threads, and more runnable threads than cores are time-sliced
// by the scheduler in milliseconds, longer than a branch (GoogLeNet's stages on 2 cores
// lost 0.4 ms each to it with a thread per branch).
#include "paleozoic/stage.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "detail.h"
#include "paleozoic/run_context.h"

namespace pz {

// One thread per lane after the first, parked between runs; lane i runs blocks i, i + L,
// i + 2L, ... one after another.
struct Stage::Helpers {
  std::vector<Block*> blocks;
  std::size_t lanes = 1;
  std::mutex turn;  // one run at a time
  std::mutex mutex;
  std::condition_variable go, done;
  std::uint64_t round = 0;
  std::size_t pending = 0;
  bool stop = false;
  RunContext* context = nullptr;
  std::vector<std::exception_ptr> failed;
  std::vector<std::thread> threads;

  explicit Helpers(std::vector<Block*> stage_blocks)
      : blocks(std::move(stage_blocks)), failed(blocks.size()) {
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    lanes = std::min(blocks.size(), cores);
    for (std::size_t lane = 1; lane < lanes; ++lane)
      threads.emplace_back([this, lane] { loop(lane); });
  }

  // Runs lane `lane`'s blocks; records each block's error.
  void runLane(std::size_t lane) {
    for (std::size_t i = lane; i < blocks.size(); i += lanes) {
      try {
        blocks[i]->runBeside();
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  }

  ~Helpers() {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    go.notify_all();
    for (std::thread& thread : threads) thread.join();
  }

  void loop(std::size_t lane) {
    std::uint64_t seen = 0;
    for (;;) {
      RunContext* run_context = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex);
        go.wait(lock, [&] { return stop || round != seen; });
        if (stop) return;
        seen = round;
        run_context = context;
      }
      {
        const RunContext::Join joined(run_context);
        runLane(lane);
      }
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (--pending == 0) done.notify_one();
      }
    }
  }

  void run() {
    const std::lock_guard<std::mutex> one_run(turn);
    std::fill(failed.begin(), failed.end(), nullptr);
    {
      const std::lock_guard<std::mutex> lock(mutex);
      context = RunContext::current();
      pending = threads.size();
      ++round;
    }
    go.notify_all();
    runLane(0);
    {
      std::unique_lock<std::mutex> lock(mutex);
      done.wait(lock, [&] { return pending == 0; });
    }
    for (const std::exception_ptr& error : failed)
      if (error) std::rethrow_exception(error);
  }
};

Stage::Stage(std::string name, std::vector<Block*> blocks)
    : name_(std::move(name)), blocks_(std::move(blocks)) {
  if (blocks_.empty()) throw Error("stage " + name_ + ": no blocks");
  int first = 0;
  for (Block* block : blocks_) {
    if (block == nullptr) throw Error("stage " + name_ + ": null block");
    const int cores = block->dataParallelism() * block->mp();
    if (first + cores > kMaxMp) {
      throw Error("stage " + name_ + ": its blocks need more than the device's " +
                  std::to_string(kMaxMp) + " cores (block " + block->name() +
                  " would start at core " + std::to_string(first) + " and take " +
                  std::to_string(cores) + "); lower their MPs so that they sum to at most " +
                  std::to_string(kMaxMp));
    }
    const unsigned int all = cores >= 32 ? ~0u : (1u << cores) - 1u;
    block->setAffinity(all << first);
    first += cores;
  }
  helpers_ = std::make_unique<Helpers>(blocks_);
}

Stage::~Stage() = default;
Stage::Stage(Stage&&) noexcept = default;

void Stage::run() { helpers_->run(); }

float Stage::lastDeviceMicros() const {
  float longest = 0.0f;
  for (const Block* block : blocks_) longest = std::max(longest, block->lastDeviceMicros());
  return longest;
}

}  // namespace pz
