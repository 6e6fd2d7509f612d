// Helpers for the main() of emitted sessions: command line, input/output files, timing
// report. Kept out of the emitted file so that it shows only what is model-specific.
#ifndef PALEOZOIC_SESSION_H_
#define PALEOZOIC_SESSION_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "paleozoic/runtime.h"

namespace pz {

// The two knobs of one F-Block, as named constants at the top of an emitted session.
struct BlockKnobs {
  bool fuse;  // compile the block's layers into one fusion op
  int mp;     // cores the block is compiled for, 1..32
};

struct SessionOptions {
  std::string weights = "weights.bin";
  std::vector<std::string> inputs;   // raw little-endian float32, one file per graph input
  std::string output_dir = ".";      // outputs are written as <output_dir>/<name>.bin
  int repeat = 1;                    // runs of the whole session (the last one is reported)
};

// Usage: session [-w WEIGHTS] [-i INPUT.bin]... [-o OUTPUT_DIR] [-r REPEAT]
// Without -i the inputs are zero-filled. Throws pz::Error on a bad command line.
SessionOptions parseSessionOptions(int argc, char** argv, std::size_t num_inputs);

void loadInputs(const SessionOptions& options, const std::vector<Tensor*>& inputs);
void saveOutputs(const SessionOptions& options, const std::vector<Tensor*>& outputs);

// Runs every block once, in order (each synchronises and records its device time).
void runBlocks(std::vector<Block>& blocks, cnrtQueue_t queue);

// Per-block device time (simulated on the mock SDK) and the total, one line per block.
void printTimings(const std::vector<Block>& blocks, double wall_ms, std::ostream& out);

}  // namespace pz

#endif  // PALEOZOIC_SESSION_H_
