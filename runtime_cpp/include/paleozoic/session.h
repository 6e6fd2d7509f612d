// Helpers for the main() of emitted sessions: command line, input/output files, timing
// report. Kept out of the emitted file so that it shows only what is model-specific.
#ifndef PALEOZOIC_SESSION_H_
#define PALEOZOIC_SESSION_H_

#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "paleozoic/runtime.h"

namespace pz {

struct SessionOptions {
  std::string weights = "weights.bin";
  // Raw little-endian values, one file per graph input: float32, or the integer input's type
  // (int64 token ids and masks, int32, uint8 pixels). Integer outputs are written as int64.
  std::vector<std::string> inputs;
  std::string output_dir = ".";      // outputs are written as <output_dir>/<name>.bin
  int repeat = 1;                    // runs of the whole session (the median is reported)
  std::string profile;               // device profile for the mock SDK's timing model ("" = built in)
  int sessions = 1;                  // -s: runs of the session at once (runConcurrentSessions)
};

// Usage: session [-w WEIGHTS] [-i INPUT.bin]... [-o OUTPUT_DIR] [-r REPEAT] [-p PROFILE]
//                [-s SESSIONS]
// Without -i the inputs are zero-filled. -p loads a device profile into the mock SDK's
// device model (applyDeviceProfile) before anything is compiled; the real SDK ignores it.
// Throws pz::Error on a bad command line or profile.
SessionOptions parseSessionOptions(int argc, char** argv, std::size_t num_inputs);

// Makes `path` the mock SDK's device profile (cnmlMockSetDeviceProfile); pz::Error naming
// the file, line and problem when it cannot be used. Called by parseSessionOptions for -p.
void applyDeviceProfile(const std::string& path);

void loadInputs(const SessionOptions& options, const std::vector<Tensor*>& inputs);
void saveOutputs(const SessionOptions& options, const std::vector<Tensor*>& outputs);

// Runs every block once, in order (each synchronises and records its device time).
void runBlocks(std::vector<Block>& blocks, cnrtQueue_t queue);
// The same with the plan's stages: where a stage's first block comes, its blocks run at once
// (Stage::run); its other blocks are not run again.
void runBlocks(std::vector<Block>& blocks, std::vector<Stage>& stages, cnrtQueue_t queue);

// Runs `forward` (runBlocks over the session's blocks, or, in a session with a run-time If,
// each branch's blocks inside `if (pz::conditionHolds(...))`) `repeat` times and returns
// the median wall time of one run in ms. The first run also touches every buffer for the
// first time, so with repeat > 1 the median is the steady state.
double runRepeated(const std::function<void()>& forward, int repeat);

// Whether a run-time If's condition (a one-element bool tensor: 1.0 or 0.0 on the device,
// 1 or 0 on the host) holds; pz::Error naming the tensor when it has another size.
bool conditionHolds(Tensor& condition);

// The process's peak resident memory so far, in MB (0 when the system does not say):
// weights, arena, the SDK's and the libraries' together, as a deployer sizes a board.
double peakResidentMb();

// Per-block device time (simulated on the mock SDK, wall clock on oneDNN) and the total, one
// line per block, the process's peak resident memory, then printImplementations.
void printTimings(const std::vector<Block>& blocks, double wall_ms, std::ostream& out);
// The same with stages: a stage's blocks are marked with its name, and it counts once in the
// total, as its longest block.
void printTimings(const std::vector<Block>& blocks, const std::vector<Stage>& stages,
                  double wall_ms, std::ostream& out);

// -s N (N > 1), after the serial run: N runs of the session at once, one thread each, each
// in a RunContext of its own over the blocks compiled once (the weights held once, an arena
// each laid out as `plan`, null for a session without one). Each runs `forward`
// options.repeat times on the inputs loadInputs reads, and its outputs must equal the
// serial run's bit for bit (read from `outputs` now): pz::Error naming the session and the
// tensor otherwise. Prints the wall time, the throughput and the peak resident memory.
void runConcurrentSessions(const SessionOptions& options, const Arena* plan,
                           const std::vector<Tensor*>& inputs,
                           const std::vector<Tensor*>& outputs,
                           const std::function<void()>& forward, std::ostream& out);

// (layer, what computes it) for every SDK op of a compiled block, in running order
// (cnmlMockOpImplementation; "host" for a host layer).
std::vector<std::pair<std::string, std::string>> implementations(const Block& block);

// What computes the session's ops (cnmlMockOpImplementation), counted per kernel, and the
// layers on a slow path: the SDK's own C++ kernels where a library computes the rest, or a
// reference implementation of the library.
void printImplementations(const std::vector<Block>& blocks, std::ostream& out);

}  // namespace pz

#endif  // PALEOZOIC_SESSION_H_
