// fp16 and int8 ops on the oneDNN SDK (quantized.cpp), reached from backend.cpp's
// makeBackendOp when an op of the chain does not compute in fp32.
#ifndef PZ_ONEDNN_QUANTIZED_H_
#define PZ_ONEDNN_QUANTIZED_H_

#include <dnnl.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "core/compute_backend.h"

namespace pz_sdk {
namespace onednn {

// Post-ops for chain[1..] as post_ops.cpp builds them for fp32 chains, and the operands they
// read: consts (`data`) or the chain's next input (`data` null; dense fp32 `user`, bound as
// `md`).
struct ChainPostOps {
  dnnl::post_ops ops;
  struct Operand {
    int index;  // post-op index
    dnnl::memory::desc md;
    const std::vector<float>* data;
    dnnl::memory::desc user;
  };
  std::vector<Operand> operands;
};

// What quantized.cpp borrows from the fp32 path (backend.cpp).
struct FloatPath {
  // The fp32 primitive(s) of a chain of FLOAT32 ops, or null; `cl`: a layout-agnostic
  // chain built over channels-last activations (null for another chain).
  std::function<std::unique_ptr<BackendOp>(const std::vector<const OpDesc*>&, int threads,
                                           bool cl)>
      make;
  // Input `i` of an op `make` made reads `value` (in the layout its primitive takes) as it
  // is, instead of reordering the caller's buffer; false when the layouts differ.
  std::function<bool(BackendOp& op, int i, const dnnl::memory& value)> read_input;
  // Output `o` of such an op in its primitive's layout (empty when that is the caller's
  // layout); with `skip`, run() leaves the caller's buffer unwritten.
  std::function<dnnl::memory(BackendOp& op, int o, bool skip)> inner_output;
  // The chain's post-ops; `full`: the layout of chain inputs of the head's output shape
  // (null: dense).
  std::function<ChainPostOps(const std::vector<const OpDesc*>&, const dnnl::memory::desc* full)>
      post_ops;
};

// `chain` has an op that computes in fp16 or int8 (numerics.h): an int8 Conv/ConvGroup/Mlp
// head runs on oneDNN's int8 primitives, a chain of fp16 ops on the fp32 path between exact
// binary16 conversions. Null when neither applies (the mock's kernels compute).
std::unique_ptr<BackendOp> makeReducedOp(const std::vector<const OpDesc*>& chain, int threads,
                                         const FloatPath& fp32);

// backendLink / backendSkipDense for the ops makeReducedOp makes: a conv or inner product
// head's fp32 result read by the next such head (or its post-op operand) in place of the
// binary16 buffer between them, with the same numbers.
bool linkReduced(BackendOp& producer, int output, BackendOp& consumer, int input);
bool skipReducedDense(BackendOp& producer, int output);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_QUANTIZED_H_
