// Buffers an op needs only while it runs (im2col panels, packed input rows, fp16 operands
// decoded to fp32). An op records at prepare how many floats each part needs; at execute
// the parts are views into one grow-only buffer of the calling thread, shared by every op
// that thread runs, so a session holds the largest need instead of the sum over its ops
// (ResNet-50's convolutions: 32 MB of panels as one buffer each, 2.6 MB shared).
#ifndef PZ_SDK_WORKSPACE_H_
#define PZ_SDK_WORKSPACE_H_

#include <cstddef>

namespace pz_sdk {

class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(std::size_t floats) : floats_(floats) {}
  void resize(std::size_t floats) { floats_ = floats; }  // contents are never kept
  std::size_t size() const { return floats_; }
  float* data() const { return data_; }  // valid while the op executes
  void place(float* at) { data_ = at; }

 private:
  std::size_t floats_ = 0;
  float* data_ = nullptr;
};

// Floats rounded up to whole 64-byte lines: each part of a workspace starts on one.
inline std::size_t lineFloats(std::size_t floats) { return (floats + 15) / 16 * 16; }

// The calling thread's workspace, grown to at least `floats` (contents not kept): valid
// until the next call on this thread at the same level. Null when floats is 0 and nothing
// was needed yet. Level 1 holds an op's buffers around another op it runs meanwhile, which
// takes level 0 (oneDNN's fp16 path: decoded operands around its fp32 primitive).
float* threadWorkspace(std::size_t floats, int level = 0);

}  // namespace pz_sdk

#endif  // PZ_SDK_WORKSPACE_H_
