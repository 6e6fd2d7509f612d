// The oneDNN SDK's backend hooks (mock/backend.h): an fp32 op, or a fusion's chain of an op
// and the element-wise ops after it, becomes one oneDNN primitive with post-ops, created at
// compile and executed at forward on the op's MP threads. Ops this file does not map are
// left to the mock's kernels (README "oneDNN backend" lists them). Forwards are timed with
// the wall clock.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <dnnl.hpp>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aligned_buffer.h"
#include "backend.h"
#include "common.h"
#include "quantized.h"
#include "sparse.h"
#include "swish.h"
#include "workspace.h"

namespace pz_mock {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

using onednn::cpuEngine;
using onednn::ThreadScope;

// Row-major fp32 of `dims`, left-padded with unit axes to `rank` (for broadcast operands).
memory::desc plain(const Dims& dims, std::size_t rank = 0) {
  memory::dims d(rank > dims.size() ? rank - dims.size() : 0, 1);
  d.insert(d.end(), dims.begin(), dims.end());
  memory::dims strides(d.size(), 1);
  for (std::size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, DT::f32, strides);
}

// An activation of `dims` in channels last when `cl` (NCHW only), else row-major: the layout
// a fusion's convolutions hand over, which layout-agnostic ops adopt (DnnlOp::agnostic_).
memory::desc act(const Dims& dims, bool cl) {
  if (!cl || dims.size() != 4) return plain(dims);
  return memory::desc(plain(dims).get_dims(), DT::f32, Tag::acdb);
}

bool channelsLast(const memory::desc& md) {
  return md.get_ndims() == 4 && md == memory::desc(md.get_dims(), DT::f32, Tag::acdb);
}

// Per-channel const (axis 1 of a rank-`rank` output), or a broadcast scalar.
memory::desc channelDesc(std::size_t channels, std::size_t rank) {
  memory::dims d(rank, 1);
  d[1] = static_cast<memory::dim>(channels);
  return plain(Dims(d.begin(), d.end()));
}

// A const operand owned by the op (oneDNN keeps only the handle).
memory constMemory(const memory::desc& md, const std::vector<float>& data) {
  memory m(md, cpuEngine());
  std::copy(data.begin(), data.end(), static_cast<float*>(m.get_data_handle()));
  return m;
}

// One runtime operand: the caller's dense buffer (`user`), reordered to or from the layout
// the primitive chose (`inner`) when they differ.
struct Port {
  int arg;  // kNoArg: a chain input the primitive reads through its destination
  memory user, inner;
  dnnl::reorder reorder;  // empty when user is bound directly
  bool reordered = false;
  bool linked = false;  // inner is the producer's (backendLink)
  bool kept = false;    // inner is read or written by another op too (a link, a write-over)
};
constexpr int kNoArg = -1;
// The input port of an op whose first primitive is a Stage (DnnlOp::stages_): not an
// argument of prim_.
constexpr int kStageInput = DNNL_ARG_MULTIPLE_SRC + 31;

// How an op is built: over channels-last activations (layout-agnostic heads), and which
// chain input, if any, its output overwrites (a residual add as oneDNN's sum post-op).
struct Build {
  bool cl = false;
  int over = -1;
};

class DnnlOp : public BackendOp {
 public:
  DnnlOp(int threads) : threads_(threads), stream_(cpuEngine()) {}

  std::string describe() const override {
    std::string text = onednn::primitiveName(prim_);
    if (swish_tail_) text += " + SDK swish";
    if (ops_ > 1) text += " (" + std::to_string(ops_) + " ops per call)";
    return text;
  }

  // Drops its copies of the chain's weights, and gives each reordered buffer its memory:
  // in the running thread's workspace for one no other op shares (it holds a value only
  // while this op runs, so a session holds the largest op's, not every op's), its own for
  // one a link or a write-over shares.
  void settle() override { settleLeaving(false); }
  void dropRebuild() override { rebuild_ = nullptr; }

  // The same, leaving the buffers a link or a write-over shares to the fusion.
  std::vector<Held> settleInFusion() override { return settleLeaving(true); }

  void placeHeld(const void* id, void* at) override {
    for (std::vector<Port>* ports : {&ins_, &outs_})
      for (Port& p : *ports)
        if (p.inner && p.inner.get() == id) p.inner.set_data_handle(at);
  }

  std::vector<Held> settleLeaving(bool shared) {
    std::vector<Held> held;
    rebuild_ = nullptr;
    transient_.clear();
    transient_floats_ = 0;
    for (int input = 1; input >= 0; --input) {
      std::vector<Port>& ports = input ? ins_ : outs_;
      for (std::size_t i = 0; i < ports.size(); ++i) {
        Port& p = ports[i];
        if (!p.reordered || p.kept || p.linked || p.arg == kNoArg) {
          if (shared && (p.kept || p.linked) && p.inner && !p.inner.get_data_handle())
            held.push_back({p.inner.get(), p.inner.get_desc().get_size()});
          else
            ownBuffer(p.inner);
          continue;
        }
        const std::size_t floats = lineFloats((p.inner.get_desc().get_size() + 3) / 4);
        transient_.push_back({input == 1, i, floats});
        transient_floats_ += floats;
      }
    }
    return held;
  }

  // Gives `m` (a port's inner memory, built without one) a buffer of this op's, unless it
  // is empty or has one already (the other side of a link gave it). Buffers are given at
  // settle(), once the links are known, so that a fusion's compile never holds every
  // step's reordered buffers at once (ResNet-50 fuse-all: 108 MB of them, most transient).
  void ownBuffer(memory& m) {
    if (!m || m.get_data_handle() != nullptr) return;
    owned_.emplace_back((m.get_desc().get_size() + 3) / 4);
    m.set_data_handle(owned_.back().data());
  }

  void run(const void* const* inputs, void* const* outputs) override {
    ThreadScope scope(threads_);
    if (!transient_.empty()) {
      float* at = threadWorkspace(transient_floats_);
      for (const Transient& t : transient_) {
        (t.input ? ins_ : outs_)[t.index].inner.set_data_handle(at);
        at += t.floats;
      }
    }
    for (std::size_t i = 0; i < ins_.size(); ++i) {
      Port& p = ins_[i];
      p.user.set_data_handle(const_cast<void*>(inputs[i]));
      if (p.reordered) p.reorder.execute(stream_, p.user, p.inner);
    }
    for (std::size_t i = 0; i < outs_.size(); ++i) outs_[i].user.set_data_handle(outputs[i]);
    if (!stages_.empty()) {
      std::unordered_map<int, memory> args = args_;
      memory from = args.at(kStageInput);
      args.erase(kStageInput);
      for (Stage& stage : stages_) {
        stage.view.set_data_handle(from.get_data_handle());
        stage.prim.execute(stream_, {{DNNL_ARG_SRC, stage.view}, {DNNL_ARG_DST, stage.out}});
        from = stage.out;
      }
      args[DNNL_ARG_SRC] = from;
      prim_.execute(stream_, args);
    } else if (views_.empty()) {
      prim_.execute(stream_, args_);
    } else {
      std::unordered_map<int, memory> args = args_;
      for (auto& [arg, view] : views_) {
        view.mem.set_data_handle(static_cast<char*>(args.at(arg).get_data_handle()) +
                                 view.offset);
        args[arg] = view.mem;
      }
      prim_.execute(stream_, args);
    }
    if (swish_tail_) {
      const memory dst = args_.at(DNNL_ARG_DST);
      onednn::swishInPlace(static_cast<float*>(dst.get_data_handle()),
                           dst.get_desc().get_size() / sizeof(float), threads_);
    }
    for (Port& p : outs_)
      if (p.reordered) p.reorder.execute(stream_, p.inner, p.user);
    stream_.wait();
  }

  int threads_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  std::vector<Port> ins_, outs_;
  // Ports whose inner buffer is placed in the thread's workspace at each run (settle()).
  struct Transient {
    bool input;
    std::size_t index;
    std::size_t floats;  // its share of the workspace, in whole 64-byte lines
  };
  std::vector<Transient> transient_;
  std::size_t transient_floats_ = 0;
  std::vector<AlignedBuffer> owned_;  // the shared ports' buffers (ownBuffer)
  std::vector<TensorRef> in_place_;  // consts read in the SDK's own copy (addConstInPlace)
  // The same chain built another way (backendLink, backendWriteOver), and how it was.
  std::function<std::unique_ptr<DnnlOp>(const Build&)> rebuild_;
  Build built_;
  bool agnostic_ = false;  // pooling, element-wise, concat: takes channels last as well
  bool swish_tail_ = false;  // PostOps::swish_tail, over the destination after prim_
  int ops_ = 1;            // the chain's ops (describe)
  // Arguments the primitive reads or writes through another desc of the same data (slices,
  // reshapes), `offset` bytes into it: bound at each run to the memory args_ holds for them.
  struct View {
    memory mem;
    std::size_t offset;
  };
  std::unordered_map<int, View> views_;
  // A primitive run before prim_ (a global average pool's first stage): it reads the input
  // port bound at kStageInput (as `view`, the same bytes seen with other dims) and writes
  // `out`, prim_'s source.
  struct Stage {
    dnnl::primitive prim;
    memory view, out;
  };
  std::vector<Stage> stages_;

  // Binds the caller's buffer of `user_md` to `arg`, through a reorder into `prim_md`.
  void addPort(bool input, int arg, const memory::desc& user_md, const memory::desc& prim_md) {
    Port p{arg, memory(user_md, cpuEngine(), nullptr), memory(), dnnl::reorder(), false};
    if (user_md != prim_md) {
      p.inner = memory(prim_md, cpuEngine(), nullptr);  // its buffer comes at settle()
      p.reorder = input ? dnnl::reorder(p.user, p.inner) : dnnl::reorder(p.inner, p.user);
      p.reordered = true;
    }
    args_[arg] = p.reordered ? p.inner : p.user;
    (input ? ins_ : outs_).push_back(std::move(p));
  }
  void addInput(int arg, const memory::desc& md) { addPort(true, arg, md, md); }
  // A chain input the primitive reads as its destination's prior contents (sum post-op).
  void addUnbound(const memory::desc& user_md) {
    ins_.push_back(Port{kNoArg, memory(user_md, cpuEngine(), nullptr), memory(),
                        dnnl::reorder(), false});
  }
  void addOutput(int arg, const memory::desc& md) { addPort(false, arg, md, md); }

  // A const the primitive reads in its plain layout where the SDK holds it: the op keeps
  // that copy alive instead of making one of its own.
  void addConstInPlace(int arg, const memory::desc& md, const TensorRef& t) {
    args_[arg] = memory(md, cpuEngine(), const_cast<float*>(t->data.data()));
    in_place_.push_back(t);
  }

  // A const in the primitive's layout: reordered once, here, straight from `data` (a copy
  // of its own only when no reorder is needed), so that a large filter is never held twice
  // by the backend while it builds (VGG-19's fc6: 411 MB).
  void addConst(int arg, const memory::desc& user_md, const std::vector<float>& data,
                const memory::desc& prim_md) {
    if (user_md == prim_md) {
      args_[arg] = constMemory(user_md, data);
      return;
    }
    const memory view(user_md, cpuEngine(), const_cast<float*>(data.data()));
    args_[arg] = onednn::inLayout(view, prim_md, stream_);
  }
};

int postArg(int index, int arg) { return DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | arg; }

// Which input of `op` is `id` (the previous op's output), or -1.
int inputIndex(const OpDesc& op, std::uint64_t id) {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i].id == id) return static_cast<int>(i);
  return -1;
}

// One eltwise algorithm with its parameters, and a factor on its result (a gate written
// without HardSwish's division by 6).
struct Eltwise {
  dnnl::algorithm alg;
  float alpha, beta;
  float scale = 1.0f;
};

// The value of a per-channel or scalar const when every element holds it (fallback when
// the const is absent).
bool uniformValue(const OpDesc& d, std::size_t c, float absent, float* value) {
  if (c >= d.consts.size() || !d.consts[c]) {
    *value = absent;
    return true;
  }
  const std::vector<float>& v = d.consts[c]->data;
  if (v.empty()) return false;
  *value = v[0];
  return std::all_of(v.begin(), v.end(), [&](float u) { return u == v[0]; });
}

// A gate x * g(x) whose g starts at ops[k] (reading x) and whose Mul, reading x and g(x),
// ends it, as exporters write SiLU (g = Sigmoid) and HardSwish (g = Scale x + 3, Clip 0..6,
// Scale / 6): the number of ops it spans (0 for none) and the one eltwise computing it.
// One eltwise_swish or eltwise_hardswish (JIT kernels, as primitives and as post-ops)
// instead of the ops with a binary_mul post-op, which oneDNN 3.2 runs on its reference
// kernel (EfficientNet-B0: 242 of 262 ms there), and without the value read twice.
std::size_t gateAt(const std::vector<const OpDesc*>& ops, std::size_t k, Eltwise* e) {
  const OpDesc& first = *ops[k];
  if (first.inputs.empty()) return 0;
  const std::uint64_t x = first.inputs[0].id;
  auto mulAt = [&](std::size_t m) {  // ops[m] = x * ops[m - 1]
    if (m >= ops.size()) return false;
    const OpDesc& mul = *ops[m];
    if (mul.kind != OpKind::kBinary || mul.binary != BinaryOp::kMult ||
        mul.inputs.size() != 2 || mul.inputs[0].dims != mul.inputs[1].dims)
      return false;
    const int s = inputIndex(mul, ops[m - 1]->outputs[0].id);
    return s >= 0 && mul.inputs[1 - s].id == x;
  };
  if (first.kind == OpKind::kActive && first.active == CNML_ACTIVE_SIGMOID && mulAt(k + 1)) {
    *e = {dnnl::algorithm::eltwise_swish, 1.0f, 0.0f};
    return 2;
  }
  float a, b, c, d;
  if (first.kind == OpKind::kScale && k + 3 < ops.size() &&
      ops[k + 1]->kind == OpKind::kActive && ops[k + 1]->active == CNML_ACTIVE_RELU6 &&
      ops[k + 2]->kind == OpKind::kScale && mulAt(k + 3) && uniformValue(first, 0, 1.0f, &a) &&
      uniformValue(first, 1, 0.0f, &b) && uniformValue(*ops[k + 2], 0, 1.0f, &c) &&
      uniformValue(*ops[k + 2], 1, 0.0f, &d) && d == 0.0f && std::abs(6.0f * c - 1.0f) < 1e-6f) {
    // x * relu6(a x + b) / 6 = x * min(1, max(0, a/6 x + b/6))
    *e = {dnnl::algorithm::eltwise_hardswish, a / 6.0f, b / 6.0f};
    return 4;
  }
  // The division after the Mul (Paddle's export: Add, Clip, Mul, Div), or none: a factor 6
  // on the eltwise's result then, since x * relu6(a x + b) = 6 hardswish(x).
  if (first.kind == OpKind::kScale && k + 2 < ops.size() &&
      ops[k + 1]->kind == OpKind::kActive && ops[k + 1]->active == CNML_ACTIVE_RELU6 &&
      mulAt(k + 2) && uniformValue(first, 0, 1.0f, &a) && uniformValue(first, 1, 0.0f, &b)) {
    *e = {dnnl::algorithm::eltwise_hardswish, a / 6.0f, b / 6.0f, 6.0f};
    const OpDesc* div = k + 3 < ops.size() ? ops[k + 3] : nullptr;
    if (div && div->kind == OpKind::kScale && div->inputs[0].id == ops[k + 2]->outputs[0].id &&
        uniformValue(*div, 0, 1.0f, &c) && uniformValue(*div, 1, 0.0f, &d) && d == 0.0f &&
        std::abs(6.0f * c - 1.0f) < 1e-6f) {
      e->scale = 1.0f;
      return 4;
    }
    return 3;
  }
  return 0;
}

// Appends a gate's eltwise (and its factor) to post-ops.
void appendGate(dnnl::post_ops& ops, const Eltwise& gate) {
  ops.append_eltwise(gate.alg, gate.alpha, gate.beta);
  if (gate.scale != 1.0f) ops.append_eltwise(dnnl::algorithm::eltwise_linear, gate.scale, 0.0f);
}

// Whether `next` ends a gate whose g the chain's last ops compute.
bool endsGate(const std::vector<const OpDesc*>& chain, const OpDesc& next) {
  std::vector<const OpDesc*> all(chain);
  all.push_back(&next);
  Eltwise e;
  for (std::size_t k = all.size() >= 4 ? all.size() - 4 : 0; k + 1 < all.size(); ++k)
    if (gateAt(all, k, &e) == all.size() - k) return true;
  return false;
}

bool eltwiseOf(cnmlActiveFunction_t fn, dnnl::algorithm* alg, float* alpha, float* beta) {
  *alpha = 0.0f;
  *beta = 0.0f;
  switch (fn) {
    case CNML_ACTIVE_RELU: *alg = dnnl::algorithm::eltwise_relu; return true;
    case CNML_ACTIVE_RELU6: *alg = dnnl::algorithm::eltwise_clip_v2; *beta = 6.0f; return true;
    case CNML_ACTIVE_RELU1: *alg = dnnl::algorithm::eltwise_clip_v2; *beta = 1.0f; return true;
    case CNML_ACTIVE_SIGMOID: *alg = dnnl::algorithm::eltwise_logistic; return true;
    case CNML_ACTIVE_TANH: *alg = dnnl::algorithm::eltwise_tanh; return true;
    case CNML_ACTIVE_HARD_SIGMOID:
      *alg = dnnl::algorithm::eltwise_hardsigmoid;
      *alpha = 0.2f;
      *beta = 0.5f;
      return true;
    case CNML_ACTIVE_NONE:
      *alg = dnnl::algorithm::eltwise_linear;
      *alpha = 1.0f;
      return true;
  }
  return false;
}

bool unaryOf(const OpDesc& d, dnnl::algorithm* alg, float* alpha, float* beta) {
  *alpha = 1.0f;
  *beta = 0.0f;
  switch (d.unary) {
    case UnaryFn::kSqrt: *alg = dnnl::algorithm::eltwise_sqrt; return true;
    case UnaryFn::kRsqrt: *alg = dnnl::algorithm::eltwise_pow; *beta = -0.5f; return true;
    case UnaryFn::kPower: *alg = dnnl::algorithm::eltwise_pow; *beta = d.power; return true;
    case UnaryFn::kGelu: *alg = dnnl::algorithm::eltwise_gelu_erf; return true;
    case UnaryFn::kGeluTanh: *alg = dnnl::algorithm::eltwise_gelu_tanh; return true;
    case UnaryFn::kErf: return false;  // no oneDNN eltwise
    case UnaryFn::kExp: *alg = dnnl::algorithm::eltwise_exp; return true;
    case UnaryFn::kLog: *alg = dnnl::algorithm::eltwise_log; return true;
    case UnaryFn::kAbs: *alg = dnnl::algorithm::eltwise_abs; return true;
    case UnaryFn::kNeg: *alg = dnnl::algorithm::eltwise_linear; *alpha = -1.0f; return true;
    case UnaryFn::kNot: return false;  // no oneDNN eltwise
    case UnaryFn::kSin:
    case UnaryFn::kCos: return false;  // no oneDNN eltwise
    case UnaryFn::kClip: return false;  // oneDNN 3.2's clip_v2 makes a nan its lower bound
  }
  return false;
}

dnnl::algorithm binaryAlg(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return dnnl::algorithm::binary_add;
    case BinaryOp::kSub: return dnnl::algorithm::binary_sub;
    case BinaryOp::kMult: return dnnl::algorithm::binary_mul;
    case BinaryOp::kRealDiv: return dnnl::algorithm::binary_div;
    case BinaryOp::kEqual: return dnnl::algorithm::binary_eq;
    case BinaryOp::kNotEqual: return dnnl::algorithm::binary_ne;
    case BinaryOp::kLess: return dnnl::algorithm::binary_lt;
    case BinaryOp::kLessEqual: return dnnl::algorithm::binary_le;
    case BinaryOp::kPow:  // no oneDNN binary pow or logic: onMockOnly keeps them on the mock
    case BinaryOp::kGreater:  // oneDNN 3.2's gt and ge are true with a nan: on the mock too
    case BinaryOp::kGreaterEqual:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor: break;
  }
  return dnnl::algorithm::binary_add;
}

// Ops oneDNN has no primitive or post-op for, whatever makeHead's switch says of their kind.
bool onMockOnly(const OpDesc& d) {
  if (d.kind != OpKind::kBinary) return false;
  switch (d.binary) {
    case BinaryOp::kPow:
    case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor: return true;
    default: return false;
  }
}

// The channel-affine ops as two binary steps with per-channel consts: batchnorm
// (x - mean) * var (the mock's semantics: var holds the reciprocal deviation), scale
// x * alpha + beta.
struct AffineStep {
  dnnl::algorithm alg;
  const TensorImpl* operand;
};
std::vector<AffineStep> affineSteps(const OpDesc& d) {
  const TensorImpl* b = d.consts.size() > 1 ? d.consts[1].get() : nullptr;
  if (d.kind == OpKind::kBatchNorm)
    return {{dnnl::algorithm::binary_sub, d.consts[0].get()},
            {dnnl::algorithm::binary_mul, b}};
  std::vector<AffineStep> steps{{dnnl::algorithm::binary_mul, d.consts[0].get()}};
  if (b) steps.push_back({dnnl::algorithm::binary_add, b});
  return steps;
}

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

bool canPost(const OpDesc& prev, const OpDesc& next) {
  if (next.outputs.size() != 1 || next.outputs[0].dims != prev.outputs[0].dims) return false;
  float a, b;
  dnnl::algorithm alg;
  switch (next.kind) {
    case OpKind::kActive: return eltwiseOf(next.active, &alg, &a, &b);
    case OpKind::kUnary: return unaryOf(next, &alg, &a, &b);
    case OpKind::kAdd: return true;
    case OpKind::kBinary:
      if (onMockOnly(next)) return false;
      // The chained value must be the left operand of a non-commutative op.
      return inputIndex(next, prev.outputs[0].id) == 0 ||
             ((next.binary == BinaryOp::kAdd || next.binary == BinaryOp::kMult) &&
              next.inputs[0].dims == next.inputs[1].dims);
    case OpKind::kBatchNorm:
    case OpKind::kScale: return next.outputs[0].dims.size() >= 2;
    default: return false;
  }
}

// `full`: the layout for chain inputs of the output's full shape (the head's output layout,
// so a residual add keeps the optimised kernel), or null for dense ones.
// `first`: the chain's first op to become a post-op (ops before it were folded into the
// head's weights).
// `sum_operand`: the chain input (counted among the post-ops' run-time operands) whose add
// becomes a sum post-op over the destination; -1 for none. Fails (throws) if that input is
// not a whole-shape add operand in `full`'s layout.
PostOps postOpsOf(const std::vector<const OpDesc*>& chain, const memory::desc* full = nullptr,
                  std::size_t first = 1, int sum_operand = -1, bool tail = false) {
  PostOps p;
  int runtime = 0;
  const std::size_t rank = chain.front()->outputs[0].dims.size();
  Eltwise head_gate;  // a gate at the head: its eltwise is the primitive, its factor the first
  if (first > 0 && gateAt(chain, 0, &head_gate) == first && head_gate.scale != 1.0f)
    p.ops.append_eltwise(dnnl::algorithm::eltwise_linear, head_gate.scale, 0.0f);
  for (std::size_t k = first; k < chain.size(); ++k) {
    const OpDesc& d = *chain[k];
    float alpha, beta;
    dnnl::algorithm alg;
    Eltwise gate;
    if (const std::size_t n = gateAt(chain, k, &gate)) {
      if (tail && gate.alg == dnnl::algorithm::eltwise_swish && k + n == chain.size()) {
        p.swish_tail = true;
        break;
      }
      appendGate(p.ops, gate);
      k += n - 1;  // g's ops and the Mul: they read nothing from outside the chain
    } else if (d.kind == OpKind::kActive && eltwiseOf(d.active, &alg, &alpha, &beta)) {
      p.ops.append_eltwise(alg, alpha, beta);
    } else if (d.kind == OpKind::kUnary && unaryOf(d, &alg, &alpha, &beta)) {
      p.ops.append_eltwise(alg, alpha, beta);
    } else if (d.kind == OpKind::kAdd || d.kind == OpKind::kBinary) {
      const int other = 1 - inputIndex(d, chain[k - 1]->outputs[0].id);
      const memory::desc user = plain(d.inputs[other].dims, rank);
      const bool whole = full && d.inputs[other].dims == chain.front()->outputs[0].dims;
      const memory::desc md = whole ? *full : user;
      const bool add = d.kind == OpKind::kAdd || d.binary == BinaryOp::kAdd;
      if (runtime++ == sum_operand) {
        if (!whole || !add) throw dnnl::error(dnnl_invalid_arguments, "not an in-place add");
        p.operands.push_back({p.ops.len(), md, nullptr, user, true});
        p.ops.append_sum();
        continue;
      }
      p.operands.push_back({p.ops.len(), md, nullptr, user});
      p.ops.append_binary(d.kind == OpKind::kAdd ? dnnl::algorithm::binary_add
                                                 : binaryAlg(d.binary), md);
    } else {  // kBatchNorm, kScale
      for (const AffineStep& s : affineSteps(d)) {
        const memory::desc md = channelDesc(s.operand->data.size(), rank);
        p.operands.push_back({p.ops.len(), md, &s.operand->data, md});
        p.ops.append_binary(s.alg, md);
      }
    }
  }
  return p;
}

// Binds the post-ops' operands (after the head's own inputs were added).
void bindPostOps(DnnlOp& op, const PostOps& p) {
  for (const PostOps::Operand& o : p.operands) {
    const int arg = postArg(o.index, DNNL_ARG_SRC_1);
    if (o.data)
      op.addConst(arg, o.md, *o.data, o.md);
    else if (o.sum)
      op.addUnbound(o.user);
    else
      op.addPort(true, arg, o.user, o.md);
  }
}

dnnl::primitive_attr attrOf(const PostOps& p) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(p.ops);
  return attr;
}

// ---- heads -------------------------------------------------------------------------------

// The batchnorm/scale ops right after a convolution or inner product, folded into its
// weights and bias (per output channel y = x * m + a): binary post-ops with per-channel
// operands cost a pass over the output each, and send grouped convolutions to a slow
// kernel. Rounds differently from the mock's op-by-op sums, within fp32 tolerance.
struct Folded {
  std::vector<float> weights, bias;
  std::size_t next = 1;  // the chain's first op left as a post-op
};
Folded foldAffine(const std::vector<const OpDesc*>& chain, std::size_t channels) {
  const OpDesc& head = *chain.front();
  Folded f;
  std::vector<float> m(channels, 1.0f), a(channels, 0.0f);
  auto at = [](const TensorImpl* t, std::size_t c) {
    return t ? t->data[t->data.size() == 1 ? 0 : c] : 0.0f;
  };
  Eltwise gate;
  for (; f.next < chain.size(); ++f.next) {
    const OpDesc& d = *chain[f.next];
    if (gateAt(chain, f.next, &gate)) break;  // the gate reads the value before it
    if ((d.kind != OpKind::kBatchNorm && d.kind != OpKind::kScale) ||
        d.outputs[0].dims.size() < 2 || d.outputs[0].dims[1] != static_cast<int>(channels))
      break;
    const TensorImpl* c0 = d.consts[0].get();
    const TensorImpl* c1 = d.consts.size() > 1 ? d.consts[1].get() : nullptr;
    for (std::size_t c = 0; c < channels; ++c) {
      const float u = at(c0, c), v = at(c1, c);
      if (d.kind == OpKind::kBatchNorm) {  // (x - u) * v
        m[c] *= v;
        a[c] = (a[c] - u) * v;
      } else {  // x * u + v
        m[c] *= u;
        a[c] = a[c] * u + v;
      }
    }
  }
  if (f.next == 1) return f;
  f.weights = head.consts[0]->data;
  const std::size_t per = f.weights.size() / channels;
  const bool bias = head.consts.size() > 1 && head.consts[1];
  f.bias.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t j = 0; j < per; ++j) f.weights[c * per + j] *= m[c];
    f.bias[c] = (bias ? head.consts[1]->data[c] : 0.0f) * m[c] + a[c];
  }
  return f;
}

// oneDNN's reference and gemm kernels apply binary post-ops element by element: a chain that
// lands there runs faster as separate steps.
bool slowWithPostOps(const std::string& impl, const PostOps& post) {
  return !post.operands.empty() &&
         (impl.find("ref") != std::string::npos || impl.find("gemm:") != std::string::npos);
}

// `over`: the chain input (op input index) whose residual add accumulates in place.
std::unique_ptr<DnnlOp> makeConv(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                 int threads, int over = -1) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;
  if (in.size() != 4 || f.size() != 4) return nullptr;
  const int g = d.group;
  const memory::desc user_src = plain(in), user_dst = plain(out);
  const memory::dims w_dims = g == 1 ? memory::dims{f[0], f[1], f[2], f[3]}
                                     : memory::dims{g, f[0] / g, f[1], f[2], f[3]};
  const memory::desc user_w(w_dims, DT::f32, g == 1 ? Tag::oihw : Tag::goihw);
  const Folded fold = foldAffine(chain, static_cast<std::size_t>(out[1]));
  const bool folded = fold.next > 1;
  const bool bias = folded || (d.consts.size() > 1 && d.consts[1]);
  const memory::desc bias_md({out[1]}, DT::f32, Tag::a);
  const ConvParams& c = d.conv;
  Tag act = Tag::any;  // the activations' layout
  auto any = [&act](const memory::desc& md) { return memory::desc(md.get_dims(), DT::f32, act); };
  auto convPd = [&](const memory::desc& dst, const PostOps& p) {
    return dnnl::convolution_forward::primitive_desc(
        cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        any(user_src), memory::desc(w_dims, DT::f32, Tag::any),
        bias ? bias_md : memory::desc(), dst, {c.sh, c.sw}, {c.dh - 1, c.dw - 1},
        {c.pt, c.pl}, {c.pb, c.pr}, attrOf(p));
  };
  // A residual input in the dense layout sends oneDNN to its reference kernel: it gets the
  // layout the convolution picks without post-ops, reordered at forward.
  dnnl::convolution_forward::primitive_desc probe = convPd(any(user_dst), PostOps());
  const std::string chosen = probe.impl_info_str();
  if (chosen.find("gemm") != std::string::npos || chosen.find("ref") != std::string::npos) {
    // Left to choose, oneDNN keeps a grouped convolution whose groups are not a multiple of
    // the vector width in the dense layout, on its im2col GEMM (10x slower here): channels
    // last has a direct kernel.
    act = Tag::acdb;
    try {
      probe = convPd(any(user_dst), PostOps());
    } catch (const dnnl::error&) {
      act = Tag::any;
    }
  } else if (!channelsLast(probe.dst_desc()) && probe.dst_desc() != plain(out)) {
    // A blocked layout (the image-facing convolution's nChw16c here) between convolutions
    // that chose channels last costs two reorders and a pooling in the dense layout: take
    // channels last when the same kernel runs it (ResNet-50's stem: 0.51 -> 0.47 ms).
    act = Tag::acdb;
    try {
      dnnl::convolution_forward::primitive_desc cl = convPd(any(user_dst), PostOps());
      if (cl.impl_info_str() == chosen) probe = cl; else act = Tag::any;
    } catch (const dnnl::error&) {
      act = Tag::any;
    }
  }
  const memory::desc layout = probe.dst_desc();
  if (over == 0) return nullptr;  // the convolution's own source
  const PostOps post = postOpsOf(chain, &layout, fold.next, over - 1, true);
  const dnnl::convolution_forward::primitive_desc pd =
      convPd(post.operands.empty() ? any(user_dst) : layout, post);
  if (slowWithPostOps(pd.impl_info_str(), post)) return nullptr;
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::convolution_forward(pd);
  op->swish_tail_ = post.swish_tail;
  op->addPort(true, DNNL_ARG_SRC, user_src, pd.src_desc());
  op->addConst(DNNL_ARG_WEIGHTS, user_w, folded ? fold.weights : d.consts[0]->data,
               pd.weights_desc());
  if (bias) op->addConst(DNNL_ARG_BIAS, bias_md, folded ? fold.bias : d.consts[1]->data, bias_md);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, user_dst, pd.dst_desc());
  return op;
}

constexpr memory::dim kInPlaceFilterBytes = memory::dim{64} << 20;

std::unique_ptr<DnnlOp> makeMlp(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                int threads) {
  const memory::dim n = d.inputs[0].dims[0];
  const memory::dim k = static_cast<memory::dim>(d.inputs[0].elements()) / n;
  const memory::dim co = d.consts[0]->dims[0];
  if (d.outputs[0].dims.size() != 2 && chain.size() > 1) return nullptr;
  const Folded fold = foldAffine(chain, static_cast<std::size_t>(co));
  const bool folded = fold.next > 1;
  const PostOps post = postOpsOf(chain, nullptr, fold.next);
  const memory::desc src({n, k}, DT::f32, Tag::ab), dst({n, co}, DT::f32, Tag::ab);
  const memory::desc user_w({co, k}, DT::f32, Tag::oi), bias_md({co}, DT::f32, Tag::a);
  const bool bias = folded || (d.consts.size() > 1 && d.consts[1]);
  // A filter this large is read in place, in its plain layout: a reordered copy would hold
  // it twice while the op builds (VGG's fc6: 411 MB), and at batch 1 a product this large
  // is bound by memory bandwidth in either layout (oneDNN's gemm against its brgemm on 2
  // cores: VGG's and AlexNet's fc6 10-15% faster plain, their 64-MB fc7 about 10% slower).
  const bool in_place = !folded && n == 1 && co * k * 4 >= kInPlaceFilterBytes;
  const dnnl::inner_product_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, src,
      in_place ? user_w : memory::desc({co, k}, DT::f32, Tag::any),
      bias ? bias_md : memory::desc(), dst, attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::inner_product_forward(pd);
  op->addInput(DNNL_ARG_SRC, src);
  if (in_place)
    op->addConstInPlace(DNNL_ARG_WEIGHTS, user_w, d.consts[0]);
  else
    op->addConst(DNNL_ARG_WEIGHTS, user_w, folded ? fold.weights : d.consts[0]->data,
                 pd.weights_desc());
  if (bias) op->addConst(DNNL_ARG_BIAS, bias_md, folded ? fold.bias : d.consts[1]->data, bias_md);
  bindPostOps(*op, post);
  op->addOutput(DNNL_ARG_DST, dst);
  return op;
}

// An average over a whole H x W plane (global average pooling, ReduceMean over H and W) in
// two pooling stages, the mean of each row and then of the row means: oneDNN sums a window
// in one float32 chain, whose error grows with its length (3,136 values: 5.5x onnxruntime's
// against float64 on offset data); two chains of H and W values err about (H + W) / (H W)
// as much. A 1-D plane [1, L] is seen as [a, L / a] with a the largest divisor of L up to
// sqrt(L) (the same bytes in either layout). Null when the window is not a whole plane or
// is short.
std::unique_ptr<DnnlOp> makeGlobalAverage(const OpDesc& d, const PostOps& post, int threads,
                                          bool cl) {
  const PoolParams& p = d.pool;
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  if (p.kh != in[2] || p.kw != in[3] || p.pt || p.pb || p.pl || p.pr || out[2] != 1 ||
      out[3] != 1 || in[2] * in[3] < 64)
    return nullptr;
  int h = in[2], w = in[3];
  if (h == 1 || w == 1) {  // a 1-D plane: rows of a divisor of its length
    const int length = h * w;
    int rows = 1;
    for (int a = 2; a * a <= length; ++a)
      if (length % a == 0) rows = a;
    if (rows < 4) return nullptr;
    h = rows;
    w = length / rows;
  }
  const auto avg = dnnl::algorithm::pooling_avg_exclude_padding;
  const auto inference = dnnl::prop_kind::forward_inference;
  const memory::desc plane = act(Dims{in[0], in[1], h, w}, cl);
  const memory::desc rows = act(Dims{in[0], in[1], h, 1}, cl), dst = act(out, cl);
  const dnnl::pooling_forward::primitive_desc first(cpuEngine(), inference, avg, plane, rows,
                                                    {1, 1}, {1, w}, {0, 0}, {0, 0}, {0, 0});
  const dnnl::pooling_forward::primitive_desc second(cpuEngine(), inference, avg, rows, dst,
                                                     {1, 1}, {h, 1}, {0, 0}, {0, 0}, {0, 0},
                                                     attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::pooling_forward(second);
  op->addPort(true, kStageInput, plain(in), act(in, cl));
  op->stages_.push_back({dnnl::pooling_forward(first), memory(plane, cpuEngine(), nullptr),
                         memory(rows, cpuEngine())});
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, plain(out), dst);
  return op;
}

std::unique_ptr<DnnlOp> makePool(const OpDesc& d, const PostOps& post, int threads, bool cl) {
  const PoolParams& p = d.pool;
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  if (in.size() != 4 || p.blend != 0.0f) return nullptr;
  // Ceil mode gives outputs whose windows reach past pb/pr: pad the right side enough.
  const int pb = std::max(p.pb, (out[2] - 1) * p.sh + (p.kh - 1) * p.dh + 1 - in[2] - p.pt);
  const int pr = std::max(p.pr, (out[3] - 1) * p.sw + (p.kw - 1) * p.dw + 1 - in[3] - p.pl);
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  if (p.mode != CNML_POOL_MAX) {
    // Counting pad cells (real == false) counts only those inside the explicit pads in the
    // mock; oneDNN's include-padding counts the whole window, the cells ceil mode adds
    // past them too: the two agree unless ceil mode added some (Inception-v3's 3x3 pools
    // with padding 1 map).
    const bool extended = pb != p.pb || pr != p.pr;
    if (!p.real && extended) return nullptr;
    alg = p.real ? dnnl::algorithm::pooling_avg_exclude_padding
                 : dnnl::algorithm::pooling_avg_include_padding;
  }
  const memory::desc src = act(in, cl), dst = act(out, cl);
  if (p.mode != CNML_POOL_MAX)
    if (std::unique_ptr<DnnlOp> op = makeGlobalAverage(d, post, threads, cl)) return op;
  const dnnl::pooling_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, alg, src, dst, {p.sh, p.sw},
      {p.kh, p.kw}, {p.dh - 1, p.dw - 1}, {p.pt, p.pl}, {pb, pr}, attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::pooling_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, plain(in), src);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, plain(out), dst);
  return op;
}

// `gate`: the head starts a gate (gateAt), whose Mul reads the head's input again (a chain
// input the primitive does not need).
std::unique_ptr<DnnlOp> makeEltwise(const OpDesc& d, const PostOps& post, int threads,
                                    bool cl, const Eltwise* gate = nullptr) {
  float alpha = gate ? gate->alpha : 1.0f, beta = gate ? gate->beta : 0.0f;
  dnnl::algorithm alg = gate ? gate->alg : dnnl::algorithm::eltwise_linear;
  const bool ok = gate || (d.kind == OpKind::kActive ? eltwiseOf(d.active, &alg, &alpha, &beta)
                                                     : unaryOf(d, &alg, &alpha, &beta));
  if (!ok) return nullptr;
  const memory::desc user = plain(d.inputs[0].dims), md = act(d.inputs[0].dims, cl);
  const dnnl::eltwise_forward::primitive_desc pd(cpuEngine(),
                                                 dnnl::prop_kind::forward_inference, alg, md,
                                                 md, alpha, beta, attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::eltwise_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, user, md);
  if (gate) op->addUnbound(user);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, user, md);
  return op;
}

// Add, the Binary family, and batchnorm/scale (the first affine step as the primitive, the
// second as a post-op ahead of the chain's).
std::unique_ptr<DnnlOp> makeBinary(const OpDesc& d, const PostOps& post, int threads,
                                   bool cl) {
  const Dims& out = d.outputs[0].dims;
  // A broadcast operand stays row-major: oneDNN broadcasts by dims, whatever the layouts.
  auto operand = [&](const Dims& dims) {
    return dims == out ? act(dims, cl) : plain(dims, out.size());
  };
  const memory::desc src0 = operand(d.inputs[0].dims), dst = act(out, cl);
  auto op = std::make_unique<DnnlOp>(threads);
  if (d.kind == OpKind::kAdd || d.kind == OpKind::kBinary) {
    const memory::desc src1 = operand(d.inputs[1].dims);
    const dnnl::algorithm alg =
        d.kind == OpKind::kAdd ? dnnl::algorithm::binary_add : binaryAlg(d.binary);
    const dnnl::binary::primitive_desc pd(cpuEngine(), alg, src0, src1, dst, attrOf(post));
    op->prim_ = dnnl::binary(pd);
    op->addPort(true, DNNL_ARG_SRC_0, plain(d.inputs[0].dims, out.size()), src0);
    op->addPort(true, DNNL_ARG_SRC_1, plain(d.inputs[1].dims, out.size()), src1);
    bindPostOps(*op, post);
    op->addPort(false, DNNL_ARG_DST, plain(out), dst);
    return op;
  }
  if (out.size() < 2) return nullptr;
  const std::vector<AffineStep> steps = affineSteps(d);
  PostOps all;
  const memory::desc c0 = channelDesc(steps[0].operand->data.size(), out.size());
  if (steps.size() > 1) {
    const memory::desc c1 = channelDesc(steps[1].operand->data.size(), out.size());
    all.operands.push_back({0, c1, &steps[1].operand->data, c1});
    all.ops.append_binary(steps[1].alg, c1);
  }
  const int shift = all.ops.len();
  for (int i = 0; i < post.ops.len(); ++i) {  // the chain's post-ops after the second step
    const dnnl::primitive::kind kind = post.ops.kind(i);
    if (kind == dnnl::primitive::kind::eltwise) {
      dnnl::algorithm alg;
      float alpha, beta;
      post.ops.get_params_eltwise(i, alg, alpha, beta);
      all.ops.append_eltwise(alg, alpha, beta);
    } else {
      dnnl::algorithm alg;
      memory::desc md;
      post.ops.get_params_binary(i, alg, md);
      all.ops.append_binary(alg, md);
    }
  }
  for (const PostOps::Operand& o : post.operands)
    all.operands.push_back({o.index + shift, o.md, o.data, o.user});
  const dnnl::binary::primitive_desc pd(cpuEngine(), steps[0].alg, src0, c0, dst, attrOf(all));
  op->prim_ = dnnl::binary(pd);
  op->addPort(true, DNNL_ARG_SRC_0, plain(d.inputs[0].dims), src0);
  op->addConst(DNNL_ARG_SRC_1, c0, steps[0].operand->data, c0);
  bindPostOps(*op, all);
  op->addPort(false, DNNL_ARG_DST, plain(out), dst);
  return op;
}

std::unique_ptr<DnnlOp> makeSoftmax(const OpDesc& d, int threads) {
  const memory::desc md = plain(d.inputs[0].dims);
  const dnnl::softmax_forward::primitive_desc pd(cpuEngine(),
                                                 dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::softmax_accurate, md, md,
                                                 d.axis);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::softmax_forward(pd);
  op->addInput(DNNL_ARG_SRC, md);
  op->addOutput(DNNL_ARG_DST, md);
  return op;
}

// Const operands (a class token) are sources the op owns; the inputs keep their order.
std::unique_ptr<DnnlOp> makeConcat(const OpDesc& d, int threads, bool cl) {
  std::vector<memory::desc> srcs;
  for (int p : d.pieces) srcs.push_back(act(p >= 0 ? d.inputs[p].dims : d.consts[-1 - p]->dims, cl));
  const memory::desc dst = act(d.outputs[0].dims, cl);
  const dnnl::concat::primitive_desc pd(cpuEngine(), dst, d.axis, srcs);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::concat(pd);
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const int arg = DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i);
    const int p = d.pieces[i];
    if (p >= 0)
      op->addPort(true, arg, plain(d.inputs[p].dims), srcs[i]);
    else
      op->addConst(arg, plain(d.consts[-1 - p]->dims), d.consts[-1 - p]->data, srcs[i]);
  }
  op->addPort(false, DNNL_ARG_DST, plain(d.outputs[0].dims), dst);
  return op;
}

// Normalised over the axes from `axis` on: a 2-D [outer, len] view, as oneDNN normalises
// over the last axis.
std::unique_ptr<DnnlOp> makeLayerNorm(const OpDesc& d, int threads) {
  const Dims& in = d.inputs[0].dims;
  const memory::dim len =
      static_cast<memory::dim>(elementCount(Dims(in.begin() + d.axis, in.end())));
  const memory::dim outer = static_cast<memory::dim>(d.inputs[0].elements()) / len;
  const memory::desc md({outer, len}, DT::f32, Tag::ab), vec({len}, DT::f32, Tag::a);
  const bool shift = d.consts.size() > 1 && d.consts[1];
  dnnl::normalization_flags flags = dnnl::normalization_flags::use_scale;
  if (shift) flags = flags | dnnl::normalization_flags::use_shift;
  const dnnl::layer_normalization_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, md, md, d.eps, flags);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::layer_normalization_forward(pd);
  op->addInput(DNNL_ARG_SRC, md);
  op->addConst(DNNL_ARG_SCALE, vec, d.consts[0]->data, vec);
  if (shift) op->addConst(DNNL_ARG_SHIFT, vec, d.consts[1]->data, vec);
  op->addOutput(DNNL_ARG_DST, md);
  return op;
}

// A [batch..., rows, cols] operand stored transposed or not, batch axes padded to `rank`.
memory::desc matrixDesc(const Dims& dims, std::size_t rank, bool transposed) {
  memory::dims d(rank - dims.size(), 1);
  d.insert(d.end(), dims.begin(), dims.end());
  memory::dims strides(rank);
  memory::dim step = d[rank - 1] * d[rank - 2];
  strides[rank - 1] = transposed ? d[rank - 2] : 1;
  strides[rank - 2] = transposed ? 1 : d[rank - 1];
  for (std::size_t i = rank - 2; i-- > 0;) {
    strides[i] = step;
    step *= d[i];
  }
  if (transposed) std::swap(d[rank - 1], d[rank - 2]);
  return memory::desc(d, DT::f32, strides);
}

std::unique_ptr<DnnlOp> makeBatchDot(const OpDesc& d, int threads) {
  const Dims& out = d.outputs[0].dims;
  const std::size_t rank = out.size();
  if (rank < 2) return nullptr;
  // The stored dims are the transposed operand's; matrixDesc swaps the logical ones.
  const memory::desc a = matrixDesc(d.inputs[0].dims, rank, d.trans_a);
  const memory::desc b = matrixDesc(d.inputs[1].dims, rank, d.trans_b);
  const memory::desc dst = plain(out);
  const dnnl::matmul::primitive_desc pd(cpuEngine(), a, b, dst);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::matmul(pd);
  op->addInput(DNNL_ARG_SRC, a);
  op->addInput(DNNL_ARG_WEIGHTS, b);
  op->addOutput(DNNL_ARG_DST, dst);
  return op;
}

// out dim i = in dim perm[i]: the input read through permuted strides, reordered dense.
// ---- data movement: slices, and reshape/transpose chains as one reorder -------------

// A strided view of `dims` (element strides): numpy's no-copy reshape of (dims, strides)
// to `to`; false when the data would have to move.
bool reshapeView(const memory::dims& dims, const memory::dims& strides, const memory::dims& to,
                 memory::dims* out) {
  memory::dims od, os;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) {
      od.push_back(dims[i]);
      os.push_back(strides[i]);
    }
  memory::dims result(to.size(), 1);
  std::size_t ni = 0, nj = 1, oi = 0, oj = 1;
  while (ni < to.size() && oi < od.size()) {
    memory::dim np = to[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= to.size()) return false;
        np *= to[nj++];
      } else {
        if (oj >= od.size()) return false;
        op *= od[oj++];
      }
    }
    for (std::size_t k = oi; k + 1 < oj; ++k)  // the merged old axes must be contiguous
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    result[nj - 1] = os[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) result[k - 1] = result[k] * to[k];
    ni = nj++;
    oi = oj++;
  }
  // Trailing unit axes take any stride.
  for (; ni < to.size(); ++ni) result[ni] = ni > 0 ? result[ni - 1] * to[ni - 1] : 1;
  *out = result;
  return true;
}

memory::dims dimsOf(const Dims& d) { return memory::dims(d.begin(), d.end()); }

// The chain of Reshape and Transpose ops as views: its input's memory seen in the dims
// where the two sides meet (`src`), and its output's (`dst`), so that one reorder moves
// the data. `in_md` / `out_md`: the layouts of the chain's input and output. False when a
// reshape needs a copy on both sides.
bool layoutViews(const std::vector<const OpDesc*>& chain, const memory::desc& in_md,
                 const memory::desc& out_md, memory::desc* src, memory::desc* dst) {
  memory::dims dims = in_md.get_dims(), strides = in_md.get_strides();
  std::size_t k = 0;
  for (; k < chain.size(); ++k) {  // forward over the input's memory while views allow
    const OpDesc& d = *chain[k];
    const memory::dims to = dimsOf(d.outputs[0].dims);
    if (d.kind == OpKind::kTranspose) {
      memory::dims ps;
      for (int p : d.perm) ps.push_back(strides[static_cast<std::size_t>(p)]);
      strides = ps;
    } else if (d.kind != OpKind::kReshape || !reshapeView(dims, strides, to, &strides)) {
      break;
    }
    dims = to;
  }
  memory::dims out_dims = out_md.get_dims(), out_strides = out_md.get_strides();
  for (std::size_t j = chain.size(); j-- > k;) {  // the rest backward over the output's
    const OpDesc& d = *chain[j];
    const memory::dims from = dimsOf(d.inputs[0].dims);
    if (d.kind == OpKind::kTranspose) {
      memory::dims is(from.size());
      for (std::size_t i = 0; i < d.perm.size(); ++i)
        is[static_cast<std::size_t>(d.perm[i])] = out_strides[i];
      out_strides = is;
    } else if (d.kind != OpKind::kReshape ||
               !reshapeView(out_dims, out_strides, from, &out_strides)) {
      return false;
    }
    out_dims = from;
  }
  *src = memory::desc(dims, DT::f32, strides);
  *dst = memory::desc(out_dims, DT::f32, out_strides);
  return true;
}

bool movesData(OpKind kind) { return kind == OpKind::kReshape || kind == OpKind::kTranspose; }

// A channel shuffle (Reshape, Transpose, Reshape), or any chain of reshapes and transposes,
// as one reorder between views of its input and output; a 4-D side in channels last when
// `cl` (ShuffleNetV2's shuffle between channels-last convolutions; a flatten of NHWC).
std::unique_ptr<DnnlOp> makeLayoutChain(const std::vector<const OpDesc*>& chain, int threads,
                                        bool cl) {
  const Dims& in = chain.front()->inputs[0].dims;
  const Dims& out = chain.back()->outputs[0].dims;
  const memory::desc in_md = act(in, cl), out_md = act(out, cl);  // act: 4-D only
  memory::desc src, dst;
  if (!layoutViews(chain, in_md, out_md, &src, &dst)) return nullptr;
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), src, cpuEngine(), dst));
  // The caller's buffers are dense; the views are of the layouts chosen above.
  op->addPort(true, DNNL_ARG_FROM, plain(in), in_md);
  op->views_[DNNL_ARG_FROM] = {memory(src, cpuEngine(), nullptr), 0};
  op->addPort(false, DNNL_ARG_TO, plain(out), out_md);
  op->views_[DNNL_ARG_TO] = {memory(dst, cpuEngine(), nullptr), 0};
  return op;
}

// A slice as a reorder from a strided view of its input (strides times the steps, the data
// handle moved to the first element read), in channels last when `cl`: ShuffleNetV2's
// channel split, Swin's patch merging (x[:, 0::2, 1::2]).
std::unique_ptr<DnnlOp> makeSlice(const OpDesc& d, int threads, bool cl) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const memory::desc in_md = act(in, cl), out_md = act(out, cl);
  const memory::dims strides = in_md.get_strides();
  memory::dims view_strides;
  std::size_t first = 0;
  for (std::size_t a = 0; a < in.size(); ++a) {
    view_strides.push_back(strides[a] * d.slice.stride[a]);
    first += static_cast<std::size_t>(d.slice.begin[a] * strides[a]);
  }
  const memory::desc src(dimsOf(out), DT::f32, view_strides);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), src, cpuEngine(), out_md));
  op->addPort(true, DNNL_ARG_FROM, plain(in), in_md);
  op->views_[DNNL_ARG_FROM] = {memory(src, cpuEngine(), nullptr), first * sizeof(float)};
  op->addPort(false, DNNL_ARG_TO, plain(out), out_md);
  return op;
}

// Deconv/DeconvGroup as oneDNN's deconvolution: the crops are its paddings, ONNX's output
// padding takes rows off the bottom crop (more than the crop would add rows past the full
// output, which hold the bias only: those stay on the mock's kernels).
std::unique_ptr<DnnlOp> makeDeconv(const OpDesc& d, int threads) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;  // [ci, co / group, kh, kw]
  const DeconvParams& p = d.deconv;
  const int pad_b = p.hd - p.oph, pad_r = p.wr - p.opw;
  if (in.size() != 4 || f.size() != 4 || pad_b < 0 || pad_r < 0) return nullptr;
  const int g = d.group;
  const memory::dims w_dims = g == 1 ? memory::dims{f[1], f[0], f[2], f[3]}
                                     : memory::dims{g, f[1], f[0] / g, f[2], f[3]};
  const memory::desc user_w(w_dims, DT::f32, g == 1 ? Tag::iohw : Tag::giohw);
  const bool bias = d.consts.size() > 1 && d.consts[1];
  const memory::desc bias_md({out[1]}, DT::f32, Tag::a);
  auto any = [](const Dims& dims) { return memory::desc(plain(dims).get_dims(), DT::f32, Tag::any); };
  const dnnl::deconvolution_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
      any(in), memory::desc(w_dims, DT::f32, Tag::any), bias ? bias_md : memory::desc(),
      any(out), {p.sh, p.sw}, {p.dh - 1, p.dw - 1}, {p.hu, p.wl}, {pad_b, pad_r});
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::deconvolution_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, plain(in), pd.src_desc());
  op->addConst(DNNL_ARG_WEIGHTS, user_w, d.consts[0]->data, pd.weights_desc());
  if (bias) op->addConst(DNNL_ARG_BIAS, bias_md, d.consts[1]->data, bias_md);
  op->addPort(false, DNNL_ARG_DST, plain(out), pd.dst_desc());
  return op;
}

std::unique_ptr<DnnlOp> makePrelu(const OpDesc& d, int threads) {
  const Dims& in = d.inputs[0].dims;
  if (in.size() < 2) return nullptr;
  const memory::desc md = plain(in);
  const memory::desc w = channelDesc(d.consts[0]->data.size(), in.size());
  const dnnl::prelu_forward::primitive_desc pd(cpuEngine(), dnnl::prop_kind::forward_inference,
                                               md, w, md);
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::prelu_forward(pd);
  op->addInput(DNNL_ARG_SRC, md);
  op->addConst(DNNL_ARG_WEIGHTS, w, d.consts[0]->data, w);
  op->addOutput(DNNL_ARG_DST, md);
  return op;
}

// Cross-channel LRN with the mock's divisor (size for V3, and for V1 while the window fits
// the channels) and a centred window (odd sizes; ONNX's is lopsided for even ones), in
// channels last, the layout oneDNN has a vector kernel for and a fusion's convolutions
// hand over. The mock's kernel takes a pow per element: 8 ms of AlexNet's first LRN.
std::unique_ptr<DnnlOp> makeLrn(const OpDesc& d, int threads) {
  const LrnParams& p = d.lrn;
  const Dims& in = d.inputs[0].dims;
  if (in.size() != 4 || p.size % 2 == 0 || p.type == CNML_LRN_V2 ||
      (p.type == CNML_LRN_V1 && p.size > 2 * in[1] - 1))
    return nullptr;
  const memory::desc user = plain(in), inner(plain(in).get_dims(), DT::f32, Tag::acdb);
  const dnnl::lrn_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels,
      inner, inner, p.size, static_cast<float>(p.alpha), static_cast<float>(p.beta),
      static_cast<float>(p.k));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::lrn_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, user, pd.src_desc());
  op->addPort(false, DNNL_ARG_DST, user, pd.dst_desc());
  return op;
}

// Resize of H and W as oneDNN's resampling, where its coordinates are ONNX's: bilinear with
// half-pixel centres (PyTorch's align_corners=False; oneDNN clamps at the edges as
// onnxruntime does), and nearest with an integer upscale of floor-rounded asymmetric
// coordinates (floor((o + 0.5) / s) == floor(o / s)). Other modes stay on the mock's
// kernels. The tiny segmentation export spent half its forward in the mock's two resizes.
std::unique_ptr<DnnlOp> makeResample(const OpDesc& d, const PostOps& post, int threads,
                                     bool cl) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  if (in.size() != 4 || out.size() != 4) return nullptr;
  // Binary post-ops on a resampling are left unproven (oneDNN 3.2 read a pooling's at the
  // wrong offsets): such a chain is declined and the resize runs alone.
  if (!post.operands.empty()) return nullptr;
  const InterpParams& p = d.interp;
  dnnl::algorithm alg;
  if (d.kind == OpKind::kInterp) {
    const bool half = p.coords == CNML_INTERP_HALF_PIXEL ||
                      (p.coords == CNML_INTERP_PYTORCH_HALF_PIXEL && out[2] > 1 && out[3] > 1);
    if (!half) return nullptr;
    alg = dnnl::algorithm::resampling_linear;
  } else {
    if (p.coords != CNML_INTERP_ASYMMETRIC || p.round != CNML_NEAREST_FLOOR ||
        out[2] % in[2] != 0 || out[3] % in[3] != 0)
      return nullptr;
    alg = dnnl::algorithm::resampling_nearest;
  }
  const memory::desc src = act(in, cl), dst = act(out, cl);
  const dnnl::resampling_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, alg, src, dst, attrOf(post));
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::resampling_forward(pd);
  op->addPort(true, DNNL_ARG_SRC, plain(in), src);
  bindPostOps(*op, post);
  op->addPort(false, DNNL_ARG_DST, plain(out), dst);
  return op;
}

// Whether a post-op reads a run-time operand of the whole output's shape.
bool wholeOperand(const PostOps& post, const Dims& out) {
  for (const PostOps::Operand& o : post.operands)
    if (!o.data && o.user.get_dims() == plain(out).get_dims()) return true;
  return false;
}

// Whether oneDNN runs `prim` on one of its reference implementations ("ref:any" and the
// like in ONEDNN_VERBOSE).
// ---- recurrent layers --------------------------------------------------------------

// oneDNN's gate g of a cell reads ONNX's gate kRnnGateFrom[g]: LSTM i, f, c~, o from
// ONNX's i, o, f, c; GRU u, r, o are ONNX's z, r, h; peepholes i, f, o from ONNX's i, o, f.
constexpr int kLstmGates[4] = {0, 2, 3, 1};
constexpr int kPeepholes[3] = {0, 2, 1};

// Rows of an ONNX [gates * H, cols] weight with its gate blocks in oneDNN's order.
std::vector<float> gatesInOrder(const std::vector<float>& onnx, int gates, const int* from,
                                std::size_t block) {
  std::vector<float> out(onnx.size());
  for (int g = 0; g < gates; ++g)
    std::copy_n(onnx.begin() + static_cast<std::ptrdiff_t>(from[g] * block), block,
                out.begin() + static_cast<std::ptrdiff_t>(g * block));
  return out;
}

// The primitive descriptor of one kRnn op (weights in the layout oneDNN prefers).
struct RnnShape {
  memory::dim steps, batch, input, hidden, gates;
};
RnnShape rnnShape(const OpDesc& d) {
  const Dims& x = d.inputs[0].dims;
  const bool bf = d.rnn.batch_first;
  return {bf ? x[1] : x[0], bf ? x[0] : x[1], x[2], d.rnn.hidden, d.rnn.gates};
}

dnnl::primitive_desc rnnPrimitive(const OpDesc& d) {
  const RnnShape s = rnnShape(d);
  const Tag seq = d.rnn.batch_first ? Tag::ntc : Tag::tnc;
  const memory::desc x({s.steps, s.batch, s.input}, DT::f32, seq);
  const memory::desc y({s.steps, s.batch, s.hidden}, DT::f32, seq);
  const memory::desc state({1, 1, s.batch, s.hidden}, DT::f32, Tag::ldnc);
  const bool lbr = d.rnn.cell == CNML_RNN_GRU_LINEAR_BEFORE_RESET;
  const memory::desc w({1, 1, s.input, s.gates, s.hidden}, DT::f32, Tag::any);
  const memory::desc r({1, 1, s.hidden, s.gates, s.hidden}, DT::f32, Tag::any);
  const memory::desc bias({1, 1, s.gates + (lbr ? 1 : 0), s.hidden}, DT::f32, Tag::ldgo);
  const auto dir = d.rnn.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                 : dnnl::rnn_direction::unidirectional_left2right;
  const auto inference = dnnl::prop_kind::forward_inference;
  // Initial states only when given (a zero desc: zeros); final states only when they are
  // the output (Y: none).
  const memory::desc none;
  // Its own scratchpad (makeRnn): the library's global one is not safe for the two
  // directions a fusion runs side by side (fusion.cpp).
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::desc h0 = d.rnn.has_h ? state : none;
  const memory::desc h_n = d.rnn.output != CNML_RNN_OUTPUT_Y ? state : none;
  switch (d.rnn.cell) {
    case CNML_RNN_LSTM: {
      const memory::desc c0 = d.rnn.has_c ? state : none;
      const memory::desc c_n = d.rnn.output != CNML_RNN_OUTPUT_Y ? state : none;
      if (d.consts[3]) {
        const memory::desc peep({1, 1, 3, s.hidden}, DT::f32, Tag::ldgo);
        return dnnl::lstm_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, c0, w, r,
                                                  peep, bias, y, h_n, c_n, attr);
      }
      return dnnl::lstm_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, c0, w, r,
                                                bias, y, h_n, c_n, attr);
    }
    case CNML_RNN_GRU:
      return dnnl::gru_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, w, r, bias, y,
                                               h_n, attr);
    case CNML_RNN_GRU_LINEAR_BEFORE_RESET:
      return dnnl::lbr_gru_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, w, r,
                                                   bias, y, h_n, attr);
    case CNML_RNN_TANH:
    case CNML_RNN_RELU:
    case CNML_RNN_SIGMOID: {
      const dnnl::algorithm f = d.rnn.cell == CNML_RNN_TANH   ? dnnl::algorithm::eltwise_tanh
                                : d.rnn.cell == CNML_RNN_RELU ? dnnl::algorithm::eltwise_relu
                                                              : dnnl::algorithm::eltwise_logistic;
      return dnnl::vanilla_rnn_forward::primitive_desc(cpuEngine(), inference, f, dir, x, h0, w,
                                                       r, bias, y, h_n, attr);
    }
  }
  throw dnnl::error(dnnl_invalid_arguments, "unknown recurrent cell");
}

// One kRnn op as one oneDNN RNN primitive: the weights reordered once from ONNX's layout
// (ldgoi after the gate permutation), W's and R's biases summed (but GRU's linear-before-
// reset Rbh, oneDNN's fourth bias), the values the output does not need in scratch memory.
std::unique_ptr<DnnlOp> makeRnn(const OpDesc& d, int threads) {
  const dnnl::primitive_desc pd = rnnPrimitive(d);
  const RnnShape s = rnnShape(d);
  const int g = static_cast<int>(s.gates);
  const std::size_t h = static_cast<std::size_t>(s.hidden);
  static constexpr int kSame[3] = {0, 1, 2};
  const int* from = d.rnn.cell == CNML_RNN_LSTM ? kLstmGates : kSame;
  const bool lbr = d.rnn.cell == CNML_RNN_GRU_LINEAR_BEFORE_RESET;
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::primitive(pd);
  op->addInput(DNNL_ARG_SRC_LAYER, pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_SRC_LAYER));
  const memory::desc state({1, 1, s.batch, s.hidden}, DT::f32, Tag::ldnc);
  if (d.rnn.has_h) op->addInput(DNNL_ARG_SRC_ITER, state);
  if (d.rnn.has_c) op->addInput(DNNL_ARG_SRC_ITER_C, state);
  // Logical dims {L, D, I, G, O}, stored as ONNX's rows (ldgoi).
  const memory::desc w_user({1, 1, s.input, g, s.hidden}, DT::f32, Tag::ldgoi);
  const memory::desc r_user({1, 1, s.hidden, g, s.hidden}, DT::f32, Tag::ldgoi);
  op->addConst(DNNL_ARG_WEIGHTS_LAYER, w_user,
               gatesInOrder(d.consts[0]->data, g, from, h * static_cast<std::size_t>(s.input)),
               pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_WEIGHTS_LAYER));
  op->addConst(DNNL_ARG_WEIGHTS_ITER, r_user, gatesInOrder(d.consts[1]->data, g, from, h * h),
               pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_WEIGHTS_ITER));
  const std::size_t gh = static_cast<std::size_t>(g) * h;
  std::vector<float> wb(gh, 0.0f), rb(gh, 0.0f);
  if (d.consts[2]) {
    const std::vector<float>& b = d.consts[2]->data;
    wb.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(gh));
    rb.assign(b.begin() + static_cast<std::ptrdiff_t>(gh), b.end());
  }
  std::vector<float> bias(gh);
  for (std::size_t i = 0; i < gh; ++i) bias[i] = wb[i] + (lbr && i >= 2 * h ? 0.0f : rb[i]);
  bias = gatesInOrder(bias, g, from, h);
  if (lbr) bias.insert(bias.end(), rb.begin() + static_cast<std::ptrdiff_t>(2 * h), rb.end());
  const memory::desc bias_md = pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_BIAS);
  op->addConst(DNNL_ARG_BIAS, bias_md, bias, bias_md);
  if (d.consts[3]) {
    const memory::desc peep({1, 1, 3, s.hidden}, DT::f32, Tag::ldgo);
    op->addConst(DNNL_ARG_WEIGHTS_PEEPHOLE, peep,
                 gatesInOrder(d.consts[3]->data, 3, kPeepholes, h), peep);
  }
  const int out_arg = d.rnn.output == CNML_RNN_OUTPUT_Y   ? DNNL_ARG_DST_LAYER
                      : d.rnn.output == CNML_RNN_OUTPUT_H ? DNNL_ARG_DST_ITER
                                                          : DNNL_ARG_DST_ITER_C;
  op->args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), cpuEngine());
  for (int arg : {DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C}) {
    const memory::desc md = pd.query_md(dnnl::query::exec_arg_md, arg);
    if (arg == out_arg)
      op->addOutput(arg, md);
    else if (md.get_ndims() > 0)
      op->args_[arg] = memory(md, cpuEngine());  // computed, not wanted: scratch
  }
  return op;
}

bool isReference(const dnnl::primitive& prim) {
  const char* info = nullptr;
  if (dnnl_primitive_desc_query(prim.get_primitive_desc(), dnnl_query_impl_info_str, 0,
                                &info) != dnnl_success || info == nullptr)
    return false;
  return std::string(info).find("ref") != std::string::npos;
}

// `b.cl`: layout-agnostic heads over channels-last activations (chain inputs of the
// output's shape included); the others ignore it. `b.over`: convolutions, and binaries
// over their first source.
std::unique_ptr<DnnlOp> makeHead(const std::vector<const OpDesc*>& chain, int threads,
                                 const Build& b = {}) {
  const OpDesc& d = *chain.front();
  const bool cl = b.cl;
  const bool conv = d.kind == OpKind::kConv || d.kind == OpKind::kConvGroup;
  // In place: a convolution's residual add, or a binary over its first source (oneDNN's
  // binary may write over src0, which has the destination's dims and layout).
  const bool binary = d.kind == OpKind::kAdd || d.kind == OpKind::kBinary;
  if (b.over >= 0 && !conv && !(binary && b.over == 0 && d.inputs[0].dims == d.outputs[0].dims))
    return nullptr;
  if (movesData(d.kind)) return makeLayoutChain(chain, threads, cl);  // no post-ops
  const memory::desc out_cl = act(chain.back()->outputs[0].dims, true);
  Eltwise gate;
  const std::size_t gated = gateAt(chain, 0, &gate);
  const PostOps post = postOpsOf(chain, cl ? &out_cl : nullptr, gated ? gated : 1);
  if (gated) return makeEltwise(d, post, threads, cl, &gate);
  const bool alone = chain.size() == 1;
  switch (d.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: return makeConv(d, chain, threads, b.over);
    case OpKind::kMlp: return makeMlp(d, chain, threads);
    case OpKind::kPool:
      // oneDNN 3.2's pooling kernel in the dense NCHW layout gets a per-element binary
      // post-op wrong (a residual add read at the wrong offsets; per-channel operands and
      // eltwise post-ops are right): such a chain pools in channels last.
      if (!cl && wholeOperand(post, d.outputs[0].dims)) {
        if (d.outputs[0].dims.size() != 4) return nullptr;
        return makeHead(chain, threads, Build{true, b.over});
      }
      return makePool(d, post, threads, cl);
    case OpKind::kActive:
    case OpKind::kUnary: return makeEltwise(d, post, threads, cl);
    case OpKind::kInterp:
    case OpKind::kNearestNeighbor: return makeResample(d, post, threads, cl);
    case OpKind::kAdd:
    case OpKind::kBinary:
    case OpKind::kBatchNorm:
    case OpKind::kScale: return makeBinary(d, post, threads, cl);
    case OpKind::kSoftmax: return alone ? makeSoftmax(d, threads) : nullptr;
    case OpKind::kConcat: return alone ? makeConcat(d, threads, cl) : nullptr;
    case OpKind::kLayerNorm: return alone ? makeLayerNorm(d, threads) : nullptr;
    case OpKind::kBatchDot: return alone ? makeBatchDot(d, threads) : nullptr;
    case OpKind::kSlice: return alone ? makeSlice(d, threads, cl) : nullptr;
    case OpKind::kDeconv:
    case OpKind::kDeconvGroup: return alone ? makeDeconv(d, threads) : nullptr;
    case OpKind::kPrelu: return alone ? makePrelu(d, threads) : nullptr;
    case OpKind::kLrn: return alone ? makeLrn(d, threads) : nullptr;
    case OpKind::kRnn: return alone ? makeRnn(d, threads) : nullptr;
    default: return nullptr;  // the mock's kernels (README: oneDNN backend)
  }
}

bool isHead(OpKind kind) {
  switch (kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup:
    case OpKind::kMlp:
    case OpKind::kPool:
    case OpKind::kActive:
    case OpKind::kUnary:
    case OpKind::kAdd:
    case OpKind::kBinary:
    case OpKind::kBatchNorm:
    case OpKind::kScale:
    case OpKind::kInterp:
    case OpKind::kNearestNeighbor: return true;
    default: return false;
  }
}

// Ops whose kernels take any layout of their NCHW activations (the heads but convolution
// and inner product, and concat): inside a fusion they adopt the channels last their
// producer's convolution hands over instead of a round trip through the dense layout
// (VGG-19: 3 of its 88 ms were the reorders around its pools).
bool layoutAgnostic(const std::vector<const OpDesc*>& chain) {
  const OpDesc& d = *chain.front();
  if (movesData(d.kind)) return d.inputs[0].dims.size() == 4;  // reads any 4-D layout
  const bool weighted = d.kind == OpKind::kConv || d.kind == OpKind::kConvGroup ||
                        d.kind == OpKind::kMlp;
  return ((isHead(d.kind) && !weighted) || d.kind == OpKind::kConcat ||
          d.kind == OpKind::kSlice) &&
         d.outputs.size() == 1 && d.outputs[0].dims.size() == 4 &&
         d.inputs[0].dims.size() == 4;
}

}  // namespace

std::unique_ptr<BackendOp> makeBackendOp(const std::vector<const OpDesc*>& chain, int threads) {
  for (const OpDesc* d : chain)
    if (precisionOf(*d) != Precision::kFp32 || d->kind == OpKind::kCast) {  // quantized.cpp
      onednn::FloatPath fp32;
      fp32.make = [](const std::vector<const OpDesc*>& c, int t,
                     bool cl) -> std::unique_ptr<BackendOp> {
        if (cl && !layoutAgnostic(c)) return nullptr;
        return makeHead(c, t, Build{cl});
      };
      fp32.read_input = [](BackendOp& op, int i, const memory& value) {
        auto* d = dynamic_cast<DnnlOp*>(&op);
        if (!d || i >= static_cast<int>(d->ins_.size())) return false;
        Port& p = d->ins_[i];
        if (!p.reordered || p.inner.get_desc() != value.get_desc()) return false;
        p.inner = value;
        p.reordered = false;
        p.linked = true;
        d->args_[p.arg] = value;
        return true;
      };
      fp32.inner_output = [](BackendOp& op, int o, bool skip) {
        auto* d = dynamic_cast<DnnlOp*>(&op);
        if (!d || o >= static_cast<int>(d->outs_.size()) || !d->outs_[o].reordered)
          return memory();
        if (skip) d->outs_[o].reordered = false;
        d->outs_[o].kept = true;
        d->ownBuffer(d->outs_[o].inner);  // the reader binds its address now
        return d->outs_[o].inner;
      };
      fp32.post_ops = [](const std::vector<const OpDesc*>& c, const memory::desc* full) {
        const PostOps p = postOpsOf(c, full);  // no tail: int8/fp16 heads take post-ops
        onednn::ChainPostOps out{p.ops, {}};
        for (const PostOps::Operand& o : p.operands)
          out.operands.push_back({o.index, o.md, o.data, o.user});
        return out;
      };
      return onednn::makeReducedOp(chain, threads, fp32);
    }
  // fp32 data only: non-float activations stay on the mock.
  auto f32 = [](const std::vector<Operand>& v) {
    for (const Operand& o : v)
      if (o.dtype != CNML_DATA_FLOAT32) return false;
    return true;
  };
  for (const OpDesc* d : chain)
    if (onMockOnly(*d) || precisionOf(*d) != Precision::kFp32 || !f32(d->inputs) ||
        !f32(d->outputs))
      return nullptr;
  if (std::unique_ptr<BackendOp> sparse = onednn::makeSparseOp(chain, threads)) return sparse;
  ThreadScope scope(threads);
  std::unique_ptr<DnnlOp> op;
  try {
    op = makeHead(chain, threads);
  } catch (const dnnl::error&) {
    // oneDNN has no implementation for this shape or attribute set: the mock computes.
    return nullptr;
  }
  // A chain whose post-ops send oneDNN to a reference kernel (an eltwise head with eltwise
  // post-ops on a small 2-D tensor, a broadcast binary with binary post-ops: 10-100x
  // slower than the JIT kernels) runs as separate ops instead: the fusion retries its head
  // alone, then the rest.
  if (op && chain.size() > 1 && isReference(op->prim_)) return nullptr;
  if (op) {
    op->agnostic_ = layoutAgnostic(chain);
    op->ops_ = static_cast<int>(chain.size());
    // Copies: the chain's records are the fusion's, and the links come later (before
    // settle(), while the fusion compiles); they read the weights from the caller's
    // buffers again rather than keep a plain copy of every op's beside the reordered one.
    std::vector<OpDesc> copies;
    for (const OpDesc* d : chain) copies.push_back(borrowingCopy(*d));
    op->rebuild_ = [copies = std::move(copies), threads](const Build& b)
        -> std::unique_ptr<DnnlOp> {
      std::vector<OpDesc> owned = copies;
      for (OpDesc& d : owned) ownBorrowedConsts(d);
      std::vector<const OpDesc*> ptrs;
      for (const OpDesc& d : owned) ptrs.push_back(&d);
      ThreadScope scope(threads);
      try {
        return makeHead(ptrs, threads, b);
      } catch (const dnnl::error&) {
        return nullptr;
      }
    };
  }
  return op;
}

namespace {

// Replaces `op` by `re`, a rebuild of it as `b` says, keeping the links its inputs have
// (but `skip`'s); false, leaving `op` as it was, if `re` is null or cannot keep them.
bool adopt(DnnlOp& op, std::unique_ptr<DnnlOp> re, const Build& b, int skip = -1) {
  if (!re || re->ins_.size() != op.ins_.size()) return false;
  for (std::size_t j = 0; j < op.ins_.size(); ++j) {
    const Port& old = op.ins_[j];
    if (static_cast<int>(j) == skip || !old.linked) continue;
    Port& p = re->ins_[j];
    if (!p.reordered || p.inner.get_desc() != old.inner.get_desc()) return false;
  }
  for (std::size_t j = 0; j < op.ins_.size(); ++j) {
    const Port& old = op.ins_[j];
    if (static_cast<int>(j) == skip || !old.linked) continue;
    Port& p = re->ins_[j];
    p.inner = old.inner;
    p.reordered = false;
    p.linked = true;
    re->args_[p.arg] = p.inner;
  }
  re->rebuild_ = std::move(op.rebuild_);
  // Buffers the op already gave a shared port (inner_output) stay alive with it.
  for (AlignedBuffer& buffer : op.owned_) re->owned_.push_back(std::move(buffer));
  re->built_ = b;
  re->agnostic_ = op.agnostic_;
  re->ops_ = op.ops_;
  op = std::move(*re);
  return true;
}

}  // namespace

bool backendCanAppend(const std::vector<const OpDesc*>& chain, const OpDesc& next) {
  if (onednn::sparseTakes(*chain.front())) return false;  // its post-ops run apart
  if (movesData(chain.front()->kind)) {  // one reorder, while the views compose
    if (!movesData(next.kind)) return false;
    std::vector<const OpDesc*> longer = chain;
    longer.push_back(&next);
    memory::desc src, dst;
    return layoutViews(longer, plain(chain.front()->inputs[0].dims),
                       plain(next.outputs[0].dims), &src, &dst);
  }
  if (!isHead(chain.front()->kind)) return false;
  if (chain.front()->kind == OpKind::kMlp && chain.front()->outputs[0].dims.size() != 2)
    return false;
  // A value computed inside the chain before its last op: only a gate's Mul reads one.
  for (std::size_t k = 0; k + 1 < chain.size(); ++k)
    if (inputIndex(next, chain[k]->outputs[0].id) >= 0) return endsGate(chain, next);
  return canPost(*chain.back(), next);
}

// Both sides reorder between the dense buffer and the same inner layout: the consumer reads
// the producer's inner memory instead.
bool backendLink(BackendOp& producer, int output, BackendOp& consumer, int input) {
  auto* from = dynamic_cast<DnnlOp*>(&producer);
  auto* to = dynamic_cast<DnnlOp*>(&consumer);
  if (!from || !to) return onednn::linkReduced(producer, output, consumer, input);
  const Port& out = from->outs_[output];
  if (to->agnostic_ && !to->built_.cl && out.reordered && !to->ins_[input].reordered &&
      channelsLast(out.inner.get_desc())) {
    Build b = to->built_;
    b.cl = true;
    adopt(*to, to->rebuild_(b), b);
  }
  Port& in = to->ins_[input];
  if (!out.reordered || !in.reordered || out.inner.get_desc() != in.inner.get_desc())
    return false;
  in.reordered = false;
  in.linked = true;
  in.inner = out.inner;
  to->args_[in.arg] = out.inner;
  from->outs_[output].kept = true;
  return true;
}

// The residual add of a convolution chain as a sum post-op over the residual's own buffer:
// the convolution accumulates into it instead of reading it beside a fresh destination
// (ResNet-50: 12 convolutions, each 20% slower with the add than onnxruntime's in-place
// sum); an element-wise binary (a squeeze-and-excitation scale) in place over its first
// source. The fusion calls this for the value's last reader only.
bool backendWriteOver(BackendOp& producer, int output, BackendOp& consumer, int input) {
  auto* from = dynamic_cast<DnnlOp*>(&producer);
  auto* to = dynamic_cast<DnnlOp*>(&consumer);
  if (!from || !to || !to->rebuild_ || to->built_.over >= 0 || to->outs_.size() != 1 ||
      !to->ins_[input].linked)
    return false;
  const memory shared = from->outs_[output].inner;
  Build b = to->built_;
  b.over = input;
  std::unique_ptr<DnnlOp> re = to->rebuild_(b);
  if (!re || !re->outs_[0].reordered || re->outs_[0].inner.get_desc() != shared.get_desc())
    return false;
  Port& dst = re->outs_[0];
  dst.inner = shared;
  dst.kept = true;
  re->args_[dst.arg] = shared;
  Port& in = re->ins_[input];
  in.linked = true;
  if (in.arg != kNoArg) {  // a binary's first source, read where its result goes
    in.inner = shared;
    in.reordered = false;
    re->args_[in.arg] = shared;
  }
  return adopt(*to, std::move(re), b, input);
}

bool backendSkipDense(BackendOp& producer, int output) {
  auto* from = dynamic_cast<DnnlOp*>(&producer);
  if (!from) return onednn::skipReducedDense(producer, output);
  // Linked, so reordered: its readers read the inner memory, and the dense user buffer is
  // neither written nor read.
  from->outs_[output].reordered = false;
  return true;
}

bool backendComputesRecurrent(const OpDesc& op) {
  try {
    rnnPrimitive(op);
    return true;
  } catch (const dnnl::error&) {
    return false;  // the caller substitutes cells
  }
}

bool backendTimesWallClock() { return true; }

}  // namespace pz_mock
