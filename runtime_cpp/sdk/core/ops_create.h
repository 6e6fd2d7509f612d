// What every base op creator shares: the operand checks, and finish(), which applies the
// rules common to all ops and registers the op.
#ifndef PZ_SDK_OPS_CREATE_H_
#define PZ_SDK_OPS_CREATE_H_

#include "state.h"

namespace pz_sdk {
namespace create {

constexpr cnmlStatus_t kBad = CNML_STATUS_INVALIDPARAM;

inline bool isActivation(cnmlTensor_t t) {
  return t && t->impl->shape_set && t->impl->type == CNML_TENSOR;
}
inline bool isWeight(cnmlTensor_t t) {
  return t && t->impl->shape_set && (t->impl->type == CNML_FILTER || t->impl->type == CNML_CONST);
}
inline const Dims& dimsOf(cnmlTensor_t t) { return t->impl->dims; }
inline Operand operand(cnmlTensor_t t) {
  return Operand{t->impl->id, t->impl->dims, t->impl->dtype};
}

// The description of an op with one input and one output, before its parameters.
inline OpDesc oneToOne(OpKind kind, cnmlTensor_t input, cnmlTensor_t output) {
  OpDesc d;
  d.kind = kind;
  d.inputs = {operand(input)};
  d.outputs = {operand(output)};
  return d;
}

// Registers the op; rejects an op that writes one of its own inputs (no in-place ops:
// fusion ordering is decided by tensor identity).
// Every op but Cast computes in one precision: its activations share one dtype (Mock
// rule: INVALIDARG otherwise).
cnmlStatus_t finish(cnmlBaseOp_t* op, OpDesc&& desc);

// The operands of a one-input op whose output has its input's shape, into d.
cnmlStatus_t createSameShape(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t output,
                             OpDesc& d);

}  // namespace create
}  // namespace pz_sdk

#endif  // PZ_SDK_OPS_CREATE_H_
