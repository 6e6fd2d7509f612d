// Helpers for the main() of emitted generation loops (`paleozoic compile --generate`): the
// command line, the KV cache as a window of slots on the host, and the choice of the next
// token. The loop itself is in the emitted file, where a user can read and change it.
#ifndef PALEOZOIC_GENERATE_H_
#define PALEOZOIC_GENERATE_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "paleozoic/runtime.h"

namespace pz {

struct GenerateOptions {
  std::string weights = "weights.bin";
  std::vector<std::int64_t> prompt;  // token ids (tokenisation stays outside)
  int new_tokens = 16;
  int top_k = 0;                     // 0: greedy (the first of equal largest logits)
  float temperature = 1.0f;
  std::uint64_t seed = 0;
  std::string output;                // the generated ids as raw int64 ("" = none)
  std::string profile;               // device profile for the mock SDK's timing model
};

// Usage: generate -t ID,ID,... [-n NEW_TOKENS] [-w WEIGHTS] [-k TOP_K] [-T TEMPERATURE]
// [-s SEED] [-o OUT.bin] [-p PROFILE]. pz::Error on a bad command line.
GenerateOptions parseGenerateOptions(int argc, char** argv);

// The KV cache of a decoder as `window` slots per layer tensor ([1, heads, window, dim]),
// the newest token in the last slot, with the attention mask over the slots. A prefill
// writes the prompt into the last slots (the empty slots before it masked: no row of
// attention is all masked, so no model needs a guard against it); each decode step
// shifts the window left by one slot, so the step's past is slots 1..window-1 and its
// present the full window again. Static shapes throughout, as CNML requires.
class KvWindow {
 public:
  // One shape per cache tensor (past_key_0, past_value_0, ...): {1, heads, window, dim}.
  KvWindow(std::vector<Shape> shapes, int window);
  int window() const { return window_; }
  // Tokens the window holds (prompt and generated); at most window().
  int filled() const { return filled_; }
  // A prefill of the first `count` prompt tokens into the last slots of an empty window:
  // the positions to feed (0..count-1); mask() then marks those slots.
  std::vector<std::int64_t> startPrompt(int count);
  // Makes room for one more token: the oldest slot (an empty one while filled() <
  // window()) drops out. pz::Error once the window is full.
  void advance();
  const std::vector<std::int64_t>& mask() const { return mask_; }
  // Cache tensor i as a decode step's past: every slot but the first, which leaves.
  void copyPast(std::size_t i, Tensor& past) const;
  // A step's present output i (all window slots) becomes the cache.
  void store(std::size_t i, Tensor& present);
  // Position of the next token (the count of real tokens before it).
  std::int64_t nextPosition() const { return filled_; }

 private:
  std::vector<Shape> shapes_;
  int window_;
  int filled_ = 0;
  std::vector<std::vector<float>> values_;  // per tensor, [heads, window, dim]
  std::vector<std::int64_t> mask_;
};

// Chooses the next token from a row of logits: greedy, or top-k sampling at a temperature
// from a generator seeded once (the same seed, the same tokens).
class TokenPicker {
 public:
  explicit TokenPicker(const GenerateOptions& options);
  std::int64_t pick(const float* logits, std::size_t vocab);

 private:
  int top_k_;
  float temperature_;
  std::mt19937_64 rng_;
};

// The device time of the blocks' last run in ms: the device model's on the mock SDK (a
// prefill and a decode step priced apart), wall clock per block on oneDNN.
double deviceMilliseconds(const std::vector<Block>& blocks);

// The last row of a [1, tokens, vocab] logits tensor, on the host.
std::vector<float> lastLogits(Tensor& logits);

// Writes the ids as raw little-endian int64 (pz::Error naming the file on failure).
void saveTokens(const std::string& path, const std::vector<std::int64_t>& tokens);

}  // namespace pz

#endif  // PALEOZOIC_GENERATE_H_
