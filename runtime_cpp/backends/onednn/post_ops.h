// A chain's ops after its head as oneDNN post-ops (eltwise, binary, sum), the gates
// x * g(x) recognised as one eltwise, and the operands the post-ops read.
#ifndef PZ_ONEDNN_POST_OPS_H_
#define PZ_ONEDNN_POST_OPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dnnl_op.h"

namespace pz_sdk {
namespace onednn {

// Which input of `op` is `id` (the previous op's output), or -1.
int inputIndex(const OpDesc& op, std::uint64_t id);

// One eltwise algorithm with its parameters, and a factor on its result (a gate written
// without HardSwish's division by 6).
struct Eltwise {
  dnnl::algorithm alg;
  float alpha, beta;
  float scale = 1.0f;
};

// A gate x * g(x) whose g starts at ops[k] (reading x) and whose Mul, reading x and g(x),
// ends it, as exporters write SiLU (g = Sigmoid) and HardSwish (g = Scale x + 3, Clip 0..6,
// Scale / 6): the number of ops it spans (0 for none) and the one eltwise computing it.
// One eltwise_swish or eltwise_hardswish (JIT kernels, as primitives and as post-ops)
// instead of the ops with a binary_mul post-op, which oneDNN 3.2 runs on its reference
// kernel (EfficientNet-B0: 242 of 262 ms there), and without the value read twice.
std::size_t gateAt(const std::vector<const OpDesc*>& ops, std::size_t k, Eltwise* e);

// Whether `next` ends a gate whose g the chain's last ops compute.
bool endsGate(const std::vector<const OpDesc*>& chain, const OpDesc& next);

bool eltwiseOf(cnmlActiveFunction_t fn, dnnl::algorithm* alg, float* alpha, float* beta);
bool unaryOf(const OpDesc& d, dnnl::algorithm* alg, float* alpha, float* beta);
dnnl::algorithm binaryAlg(BinaryOp op);

// Ops oneDNN has no primitive or post-op for, whatever headKind says of their kind.
bool onMockOnly(const OpDesc& d);

// The channel-affine ops as two binary steps with per-channel consts: batchnorm
// (x - mean) * var (the mock's semantics: var holds the reciprocal deviation), scale
// x * alpha + beta.
struct AffineStep {
  dnnl::algorithm alg;
  const TensorImpl* operand;
};
std::vector<AffineStep> affineSteps(const OpDesc& d);

// Post-ops for the ops after the head, and the operands they read: chain inputs (bound at
// forward after the head's inputs) or consts. `rank`: the head's output rank.
struct PostOps {
  dnnl::post_ops ops;
  // The chain ends in a SiLU that the op computes itself after the primitive (swishTail),
  // not as oneDNN's eltwise_swish post-op (postOpsOf's `tail`).
  bool swish_tail = false;
  struct Operand {
    int index;  // post-op index
    memory::desc md;
    const std::vector<float>* data;  // a const, or null for the next chain input
    memory::desc user;               // a chain input's dense layout (md may be blocked)
    bool sum = false;                // read through the destination (Build::over)
  };
  std::vector<Operand> operands;
};

// Whether `next`, reading `prev`'s output, can be a post-op after it.
bool canPost(const OpDesc& prev, const OpDesc& next);

// `full`: the layout for chain inputs of the output's full shape (the head's output layout,
// so a residual add keeps the optimised kernel), or null for dense ones.
// `first`: the chain's first op to become a post-op (ops before it were folded into the
// head's weights).
// `sum_operand`: the chain input (counted among the post-ops' run-time operands) whose add
// becomes a sum post-op over the destination; -1 for none. Fails (throws) if that input is
// not a whole-shape add operand in `full`'s layout.
PostOps postOpsOf(const std::vector<const OpDesc*>& chain, const memory::desc* full = nullptr,
                  std::size_t first = 1, int sum_operand = -1, bool tail = false);

// Binds the post-ops' operands (after the head's own inputs were added).
void bindPostOps(DnnlOp& op, const PostOps& p);

dnnl::primitive_attr attrOf(const PostOps& p);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_POST_OPS_H_
