// Base op creation (ops_create.cpp): the ops that move data without arithmetic (concat,
// reshape, transpose, slice, gather), the fp16/fp32 cast and the host transfer.
#include "call_log.h"
#include "ops_create.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), Call
using namespace pz_sdk::create;

namespace {

// Transpose and strided slice: a param with an entry per input axis, and an output of the
// input's rank whose axis i spans extent(i) (-1 where the param does not fit that axis).
template <typename Extent>
bool perAxisOutput(cnmlTensor_t input, cnmlTensor_t output, std::size_t param_rank,
                   Extent extent) {
  const Dims &in = dimsOf(input), &out = dimsOf(output);
  if (param_rank != in.size() || out.size() != in.size()) return false;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (out[i] != extent(i)) return false;
  return true;
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlCreateNdConcatOp(cnmlBaseOp_t* op, int dim, cnmlTensor_t inputs[],
                                  int input_num, cnmlTensor_t outputs[], int output_num) {
  if (!op || !inputs || !outputs || input_num < 1 || output_num != 1) return kBad;
  if (!isActivation(outputs[0])) return kBad;
  const Dims& out = dimsOf(outputs[0]);
  if (dim < 0 || static_cast<std::size_t>(dim) >= out.size()) return kBad;
  OpDesc d;
  d.kind = OpKind::kConcat;
  d.axis = dim;
  long long total = 0;
  for (int i = 0; i < input_num; ++i) {
    // Mock rule: an operand may be a CNML_CONST tensor (its data bound before compile, as
    // every const), e.g. a class token before a transformer's patch tokens.
    const bool constant = inputs[i] && inputs[i]->impl->shape_set &&
                          inputs[i]->impl->type == CNML_CONST;
    if (!isActivation(inputs[i]) && !constant) return kBad;
    const Dims& in = dimsOf(inputs[i]);
    if (in.size() != out.size()) return kBad;
    for (std::size_t a = 0; a < in.size(); ++a)
      if (static_cast<int>(a) != dim && in[a] != out[a]) return kBad;
    total += in[dim];
    if (constant) {
      d.pieces.push_back(-1 - static_cast<int>(d.consts.size()));
      d.consts.push_back(inputs[i]->impl);
    } else {
      d.pieces.push_back(static_cast<int>(d.inputs.size()));
      d.inputs.push_back(operand(inputs[i]));
    }
  }
  if (total != out[dim]) return kBad;
  // Mock rule: a concat of consts only is no device work; the caller folds it.
  if (d.inputs.empty()) return CNML_STATUS_UNSUPPORT;
  d.outputs = {operand(outputs[0])};
  return logged(finish(op, std::move(d)), "cnmlCreateNdConcatOp", [&](Call& c) {
    c.created(op).value(dim).tensors("inputs", inputs, input_num).value(input_num)
        .tensors("outputs", outputs, output_num).value(output_num);
  });
}

cnmlStatus_t cnmlCreateReshapeOp(cnmlBaseOp_t* op, cnmlReshapeOpParam_t param,
                                 cnmlTensor_t input, cnmlTensor_t output) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  if (param->dims != dimsOf(output)) return kBad;
  if (elementCount(dimsOf(input)) != elementCount(dimsOf(output))) return kBad;
  OpDesc d = oneToOne(OpKind::kReshape, input, output);
  return logged(finish(op, std::move(d)), "cnmlCreateReshapeOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlCreateNdTransposeProOp(cnmlBaseOp_t* op, cnmlTensor_t input,
                                        cnmlTensor_t output, cnmlTransposeOpParam_t param) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims &in = dimsOf(input), &perm = param->order;
  if (!perAxisOutput(input, output, perm.size(), [&](std::size_t i) { return in[perm[i]]; }))
    return kBad;
  OpDesc d = oneToOne(OpKind::kTranspose, input, output);
  d.perm = perm;
  return logged(finish(op, std::move(d)), "cnmlCreateNdTransposeProOp", [&](Call& c) {
    c.created(op).handle(input).handle(output).handle(param);
  });
}

cnmlStatus_t cnmlCreateNdStridedSliceOp(cnmlBaseOp_t* op, cnmlNdStridedSliceOpParam_t param,
                                        cnmlTensor_t input, cnmlTensor_t output) {
  if (!op || !param || !isActivation(input) || !isActivation(output)) return kBad;
  const Dims& in = dimsOf(input);
  const SliceParams& p = param->p;
  const auto extent = [&](std::size_t i) {
    return p.end[i] > in[i] ? -1 : (p.end[i] - p.begin[i] + p.stride[i] - 1) / p.stride[i];
  };
  if (!perAxisOutput(input, output, p.begin.size(), extent)) return kBad;
  OpDesc d = oneToOne(OpKind::kSlice, input, output);
  d.slice = p;
  return logged(finish(op, std::move(d)), "cnmlCreateNdStridedSliceOp", [&](Call& c) {
    c.created(op).handle(param).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlCreateGatherV2Op(cnmlBaseOp_t* op, cnmlTensor_t input, cnmlTensor_t index,
                                  cnmlTensor_t output, cnmlDimension_t dim) {
  if (!op || !input || !input->impl->shape_set || !isActivation(index) || !isActivation(output))
    return kBad;
  if (input->impl->type != CNML_CONST) return CNML_STATUS_UNSUPPORT;  // Mock: tables only
  const Dims &table = dimsOf(input), &idx = dimsOf(index), &out = dimsOf(output);
  const int axis = static_cast<int>(dim);
  if (axis < 0 || axis > 3 || axis >= static_cast<int>(table.size())) return kBad;
  Dims want(table.begin(), table.begin() + axis);
  want.insert(want.end(), idx.begin(), idx.end());
  want.insert(want.end(), table.begin() + axis + 1, table.end());
  if (out != want) return kBad;
  OpDesc d = oneToOne(OpKind::kGatherV2, index, output);
  d.axis = axis;
  d.consts = {input->impl};
  return logged(finish(op, std::move(d)), "cnmlCreateGatherV2Op", [&](Call& c) {
    c.created(op).handle(input).handle(index).handle(output).value(dim);
  });
}

cnmlStatus_t cnmlCreateCastOp(cnmlBaseOp_t* op, cnmlCastType_t cast_type, cnmlTensor_t input,
                              cnmlTensor_t output) {
  if (!op || !isActivation(input) || !isActivation(output)) return kBad;
  if (cast_type < CNML_CAST_FLOAT32_TO_UINT8 || cast_type > CNML_CAST_FLOAT16_TO_INT16 ||
      cast_type == 2)
    return kBad;
  cnmlDataType_t from, to;
  if (cast_type == CNML_CAST_FLOAT32_TO_FLOAT16) {
    from = CNML_DATA_FLOAT32;
    to = CNML_DATA_FLOAT16;
  } else if (cast_type == CNML_CAST_FLOAT16_TO_FLOAT32) {
    from = CNML_DATA_FLOAT16;
    to = CNML_DATA_FLOAT32;
  } else {
    return CNML_STATUS_UNSUPPORT;
  }
  if (dimsOf(input) != dimsOf(output)) return kBad;
  if (input->impl->dtype != from || output->impl->dtype != to) return CNML_STATUS_INVALIDARG;
  OpDesc d = oneToOne(OpKind::kCast, input, output);
  d.cast = cast_type;
  return logged(finish(op, std::move(d)), "cnmlCreateCastOp", [&](Call& c) {
    c.created(op).value(cast_type).handle(input).handle(output);
  });
}

cnmlStatus_t cnmlMockCreateHostTransferOp(cnmlBaseOp_t* op, cnmlTensor_t inputs[],
                                          int input_num, cnmlTensor_t output,
                                          size_t to_host_bytes, size_t to_device_bytes) {
  if (!op || !inputs || input_num < 1 || !isActivation(output)) return kBad;
  OpDesc d;
  d.kind = OpKind::kHostTransfer;
  for (int i = 0; i < input_num; ++i) {
    if (!isActivation(inputs[i])) return kBad;
    d.inputs.push_back(operand(inputs[i]));
  }
  d.outputs = {operand(output)};
  d.to_host_bytes = static_cast<double>(to_host_bytes);
  d.to_device_bytes = static_cast<double>(to_device_bytes);
  return logged(finish(op, std::move(d)), "cnmlMockCreateHostTransferOp", [&](Call& c) {
    c.created(op).value(input_num).handle(output).value(to_host_bytes).value(to_device_bytes);
  });
}

}  // extern "C"
