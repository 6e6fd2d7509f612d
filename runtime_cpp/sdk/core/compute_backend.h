// The compute-backend seam: between the SDK core's bookkeeping (tensors, op records, rule
// checks, fusion graphs, queues) and the library that computes. The mock SDK links the
// reference backend (runtime_cpp/backends/reference), which computes nothing here, so every
// op runs on the SDK's reference kernels (sdk/kernels) and time is the device model's
// (sdk/device_model); the oneDNN SDK (runtime_cpp/backends/onednn) links its own
// definitions, which compute ops with oneDNN primitives and time forwards with the wall
// clock.
#ifndef PZ_SDK_COMPUTE_BACKEND_H_
#define PZ_SDK_COMPUTE_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "state.h"

namespace pz_sdk {

// A compiled op or chain of ops. run() takes the chain's inputs (the first op's, then each
// appended op's inputs that the chain does not compute itself) and the last op's
// outputs, dense in their operands' dims and dtypes (fp32, or binary16 for FLOAT16).
class BackendOp {
 public:
  virtual ~BackendOp() = default;
  virtual void run(const void* const* inputs, void* const* outputs) = 0;
  // What computes it, for reports: the library's kernel ("convolution brgconv_1x1:avx512_core").
  virtual std::string describe() const = 0;
  // Called once nothing will link to or rebuild the op any more (the fusion made its links;
  // a base op at once): it may drop what only a rebuild needed, such as the plain weights.
  virtual void settle() {}
  // Whether the fusion may still rebuild the op after its own links are made, as the
  // producer of a value whose last reader is linked (backendSkipDense): then it keeps the
  // weights a rebuild reads until then.
  virtual bool rebuiltAsProducer() const { return false; }
  // Called once the fusion will not rebuild the op any more (before settle()): it drops what
  // only a rebuild needed, such as its records of the chain's weights.
  virtual void dropRebuild() {}

  // A buffer of the backend's that values passed between a fusion's steps live in (a
  // link's, which a write-over may fill with the next value): an identity every op sharing
  // it reports alike, and its bytes.
  struct Held {
    const void* id;
    std::size_t bytes;
  };
  // settle() inside a fusion, leaving the buffers it shares with other steps without
  // memory: the fusion places them by lifetime beside its scratch values and gives each its
  // place (placeHeld), so that it holds the values alive at once, not all of them.
  virtual std::vector<Held> settleInFusion() {
    settle();
    return {};
  }
  virtual void placeHeld(const void* id, void* at) {
    (void)id;
    (void)at;
  }
};

// `chain`: ops where each one after the first reads the single output of the one before
// (and nothing else reads it), or the ops of a gate x * g(x), where g's first op and the
// Mul read the value before them.
// Returns null when the backend does not compute the chain;
// the mock's kernels then run it (one op) or the chain is not formed (backendCanAppend).
// Consts are bound. `threads` is the op's MP. Called for ops of every precision: a backend
// that computes fp16 or int8 ops follows numerics.h as far as it can.
std::unique_ptr<BackendOp> makeBackendOp(const std::vector<const OpDesc*>& chain, int threads);

// Whether `next` can be merged into `chain` as one backend op (post-ops).
bool backendCanAppend(const std::vector<const OpDesc*>& chain, const OpDesc& next);

// Inside a fusion op, `producer`'s output `output` is read by `consumer`'s input `input`:
// the backend may hand the value over in its own layout (oneDNN's blocked layouts) instead
// of the dense buffer the fusion passes both; true when it does. When every reader of a
// value nothing outside the fusion sees was linked, backendSkipDense(producer, output)
// lets the producer leave the dense buffer unwritten; true when it does, and no step touches
// that buffer any more (the fusion then gives the value no bytes of its arena).
bool backendLink(BackendOp& producer, int output, BackendOp& consumer, int input);
bool backendSkipDense(BackendOp& producer, int output);

// After backendSkipDense: `consumer`, the value's last reader, reads it once, through a
// link. The backend may have it write its output over the value's buffer (a residual add
// accumulated in place: no second stream of the same size); true when it does.
bool backendWriteOver(BackendOp& producer, int output, BackendOp& consumer, int input);

// Whether the backend computes this kRnn op (cnmlCreateRnnOp asks at creation, before any
// const is bound, and refuses with CNML_STATUS_UNSUPPORT when not, so the caller
// substitutes cells: the mock's kernels have no recurrent op).
bool backendComputesRecurrent(const OpDesc& op);

// True when forwards advance the queue clock by their measured wall-clock time instead of
// the device model's time.
bool backendTimesWallClock();

}  // namespace pz_sdk

#endif  // PZ_SDK_COMPUTE_BACKEND_H_
