"""SDK rules of the Binary, NdStridedSlice and Prelu ops that the wrapper never lets through
(it validates first), checked on their status codes by a small C program against the mock
SDK: the raw form, or any hand-written CNML code, meets them."""

from __future__ import annotations

from pathlib import Path

from helpers import (INVALIDARG, INVALIDPARAM, SDK_MAIN_START, SDK_PROGRAM_EPILOGUE,
                     SDK_PROGRAM_PRELUDE, SUCCESS, UNSUPPORT,
                     sdk_program_statuses)

# Prints "<case> <status>" per line; the test compares with the statuses the rules give.
PROGRAM = SDK_PROGRAM_PRELUDE + SDK_MAIN_START + r"""

  // ---- strided slice parameters and op
  int begin[] = {0, 1, 0, 0}, end[] = {1, 3, 4, 4}, stride[] = {1, 1, 2, 1};
  int zero[] = {1, 0, 1, 1}, negative[] = {1, -1, 1, 1}, empty_end[] = {1, 1, 4, 4};
  cnmlNdStridedSliceOpParam_t p = nullptr;
  report("slice_param_ok", cnmlCreateNdStridedSliceOpParam(&p, 4, begin, end, stride));
  cnmlNdStridedSliceOpParam_t bad = nullptr;
  report("slice_param_stride0", cnmlCreateNdStridedSliceOpParam(&bad, 4, begin, end, zero));
  report("slice_param_negative_stride",
         cnmlCreateNdStridedSliceOpParam(&bad, 4, begin, end, negative));
  report("slice_param_empty", cnmlCreateNdStridedSliceOpParam(&bad, 4, begin, empty_end, stride));
  report("slice_param_rank7", cnmlCreateNdStridedSliceOpParam(&bad, 7, begin, end, stride));
  cnmlTensor_t x = tensor(CNML_TENSOR, {1, 3, 4, 4});
  cnmlTensor_t small = tensor(CNML_TENSOR, {1, 2, 4, 4});
  cnmlTensor_t sliced = tensor(CNML_TENSOR, {1, 2, 2, 4});
  cnmlTensor_t wrong = tensor(CNML_TENSOR, {1, 2, 4, 4});
  cnmlBaseOp_t slice = nullptr, op = nullptr;
  report("slice_op_wrong_output", cnmlCreateNdStridedSliceOp(&op, p, x, wrong));
  report("slice_op_end_past_dim", cnmlCreateNdStridedSliceOp(&op, p, small, sliced));
  report("slice_op_ok", cnmlCreateNdStridedSliceOp(&slice, p, x, sliced));
  cnmlDestroyNdStridedSliceOpParam(&p);  // the op keeps what it needs

  // ---- binary ops
  cnmlTensor_t per_channel = tensor(CNML_TENSOR, {1, 3, 1, 1});
  cnmlTensor_t other = tensor(CNML_TENSOR, {1, 3, 4, 4});
  cnmlTensor_t sum = tensor(CNML_TENSOR, {1, 3, 4, 4});
  cnmlTensor_t bad_b = tensor(CNML_TENSOR, {1, 3, 2, 1});
  cnmlBaseOp_t mult = nullptr, badd = nullptr;
  report("mult_unequal", cnmlCreateMultOp(&op, x, per_channel, sum));
  report("realdiv_unequal", cnmlCreateRealDivOp(&op, x, per_channel, sum));
  report("broadcast_bad_b", cnmlCreateBroadcastSubOp(&op, x, bad_b, sum));
  report("broadcast_b_first", cnmlCreateBroadcastAddOp(&op, per_channel, x, sum));
  report("broadcast_equal_ok", cnmlCreateBroadcastAddOp(&badd, x, other, sum));
  report("mult_ok", cnmlCreateMultOp(&mult, x, other, sum));
  report("compile_mult", cnmlCompileBaseOp(mult, CNML_MLU100, 1));
  void *dx = nullptr, *dother = nullptr, *dsum = nullptr;
  cnrtMalloc(&dx, 48 * sizeof(float));
  cnrtMalloc(&dother, 48 * sizeof(float));
  cnrtMalloc(&dsum, 48 * sizeof(float));
  report("sub_forward_on_mult_op",
         cnmlComputeSubOpForward_V4(mult, x, dx, other, dother, sum, dsum, queue, nullptr));
  report("broadcast_mult_forward_on_mult_op",
         cnmlComputeBroadcastMultOpForward_V4(mult, x, dx, other, dother, sum, dsum, queue,
                                              nullptr));
  report("mult_forward",
         cnmlComputeMultOpForward_V4(mult, x, dx, other, dother, sum, dsum, queue, nullptr));

  // ---- prelu: one slope per channel, or one shared; a CONST tensor
  cnmlTensor_t slope2 = tensor(CNML_CONST, {2});
  cnmlTensor_t slope_act = tensor(CNML_TENSOR, {3});
  cnmlTensor_t shared = tensor(CNML_CONST, {1, 1, 1, 1});
  cnmlTensor_t y = tensor(CNML_TENSOR, {1, 3, 4, 4});
  cnmlBaseOp_t prelu = nullptr;
  report("prelu_slope_length", cnmlCreatePreluOp(&op, x, y, slope2));
  report("prelu_slope_not_const", cnmlCreatePreluOp(&op, x, y, slope_act));
  report("prelu_shared_ok", cnmlCreatePreluOp(&prelu, x, y, shared));
  report("prelu_compile_unbound", cnmlCompileBaseOp(prelu, CNML_MLU100, 1));
  float alpha = 0.25f;
  cnmlBindConstData_V2(shared, &alpha, false);
  report("prelu_compile", cnmlCompileBaseOp(prelu, CNML_MLU100, 1));
  std::vector<float> host(48), out(48);
  for (int i = 0; i < 48; ++i) host[i] = static_cast<float>(i % 7) - 3.0f;
  cnrtMemcpy(dx, host.data(), 48 * sizeof(float), CNRT_MEM_TRANS_DIR_HOST2DEV);
  void* dy = nullptr;
  cnrtMalloc(&dy, 48 * sizeof(float));
  report("prelu_forward", cnmlComputePreluOpForward_V4(prelu, x, dx, y, dy, queue, nullptr));
  cnrtSyncQueue(queue);
  cnrtMemcpy(out.data(), dy, 48 * sizeof(float), CNRT_MEM_TRANS_DIR_DEV2HOST);
  int mismatches = 0;
  for (int i = 0; i < 48; ++i)
    if (out[i] != (host[i] >= 0 ? host[i] : alpha * host[i])) ++mismatches;
  report("prelu_shared_mismatches", mismatches);

  for (void* ptr : {dx, dother, dsum, dy}) cnrtFree(ptr);
  for (cnmlBaseOp_t* o : {&slice, &mult, &badd, &prelu}) cnmlDestroyBaseOp(o);
  for (cnmlTensor_t* t : {&x, &small, &sliced, &wrong, &per_channel, &other, &sum, &bad_b,
                          &slope2, &slope_act, &shared, &y})
    cnmlDestroyTensor(t);
""" + SDK_PROGRAM_EPILOGUE

EXPECTED = {
    "slice_param_ok": SUCCESS,
    "slice_param_stride0": INVALIDPARAM,
    "slice_param_negative_stride": UNSUPPORT,
    "slice_param_empty": INVALIDPARAM,
    "slice_param_rank7": INVALIDPARAM,
    "slice_op_wrong_output": INVALIDPARAM,
    "slice_op_end_past_dim": INVALIDPARAM,
    "slice_op_ok": SUCCESS,
    "mult_unequal": INVALIDPARAM,
    "realdiv_unequal": INVALIDPARAM,
    "broadcast_bad_b": INVALIDPARAM,
    "broadcast_b_first": INVALIDPARAM,
    "broadcast_equal_ok": SUCCESS,
    "mult_ok": SUCCESS,
    "compile_mult": SUCCESS,
    "sub_forward_on_mult_op": INVALIDPARAM,
    "broadcast_mult_forward_on_mult_op": INVALIDPARAM,
    "mult_forward": SUCCESS,
    "prelu_slope_length": INVALIDPARAM,
    "prelu_slope_not_const": INVALIDPARAM,
    "prelu_shared_ok": SUCCESS,
    "prelu_compile_unbound": INVALIDARG,
    "prelu_compile": SUCCESS,
    "prelu_forward": SUCCESS,
    "prelu_shared_mismatches": 0,
}


def test_sdk_rules_of_the_new_ops(tmp_path: Path) -> None:
    assert sdk_program_statuses(PROGRAM, tmp_path) == EXPECTED
