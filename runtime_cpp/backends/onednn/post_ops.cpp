// The post-op chains of post_ops.h: gates, eltwise and binary algorithms, and PostOps.
#include "post_ops.h"

#include <algorithm>
#include <cmath>

namespace pz_sdk {
namespace onednn {
namespace {

int postArg(int index, int arg) { return DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | arg; }

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

// Appends a gate's eltwise (and its factor) to post-ops.
void appendGate(dnnl::post_ops& ops, const Eltwise& gate) {
  ops.append_eltwise(gate.alg, gate.alpha, gate.beta);
  if (gate.scale != 1.0f) ops.append_eltwise(dnnl::algorithm::eltwise_linear, gate.scale, 0.0f);
}

}  // namespace

int inputIndex(const OpDesc& op, std::uint64_t id) {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i].id == id) return static_cast<int>(i);
  return -1;
}

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

std::vector<AffineStep> affineSteps(const OpDesc& d) {
  const TensorImpl* b = d.consts.size() > 1 ? d.consts[1].get() : nullptr;
  if (d.kind == OpKind::kBatchNorm)
    return {{dnnl::algorithm::binary_sub, d.consts[0].get()},
            {dnnl::algorithm::binary_mul, b}};
  std::vector<AffineStep> steps{{dnnl::algorithm::binary_mul, d.consts[0].get()}};
  if (b) steps.push_back({dnnl::algorithm::binary_add, b});
  return steps;
}

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

PostOps postOpsOf(const std::vector<const OpDesc*>& chain, const memory::desc* full,
                  std::size_t first, int sum_operand, bool tail) {
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

}  // namespace onednn
}  // namespace pz_sdk
