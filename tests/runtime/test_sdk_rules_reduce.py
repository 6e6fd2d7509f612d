"""SDK rules of the reductions (NdReduceSum/Mean/Max/Min/Prod), NdLogSoftmax, Pow /
BroadcastPow and the unary Exp, Log, Abs, Neg on their status codes, by a small C program
against the mock SDK (what the wrapper checks first, the SDK refuses too)."""

from __future__ import annotations

from pathlib import Path

from helpers import (INVALIDPARAM, SDK_MAIN_START, SDK_PROGRAM_EPILOGUE, SDK_PROGRAM_PRELUDE,
                     SUCCESS, sdk_program_statuses)

PROGRAM = SDK_PROGRAM_PRELUDE + SDK_MAIN_START + r"""
  cnmlBaseOp_t op = nullptr, sum = nullptr;

  // ---- reductions over a set of axes
  cnmlTensor_t x = tensor(CNML_TENSOR, {2, 3, 4});
  cnmlTensor_t kept = tensor(CNML_TENSOR, {2, 1, 4}), dropped = tensor(CNML_TENSOR, {2, 4});
  cnmlTensor_t two = tensor(CNML_TENSOR, {1, 3, 1}), wrong = tensor(CNML_TENSOR, {2, 3});
  const int a1[] = {1}, a02[] = {0, 2}, a20[] = {2, 0}, a11[] = {1, 1}, a3[] = {3};
  report("sum_kept_ok", cnmlCreateNdReduceSumOp(&sum, a1, 1, x, kept));
  report("mean_dropped_ok", cnmlCreateNdReduceMeanOp(&op, a1, 1, x, dropped));
  cnmlDestroyBaseOp(&op);
  report("max_two_axes_ok", cnmlCreateNdReduceMaxOp(&op, a02, 2, x, two));
  cnmlDestroyBaseOp(&op);
  report("min_descending_axes", cnmlCreateNdReduceMinOp(&op, a20, 2, x, two));
  report("prod_repeated_axis", cnmlCreateNdReduceProdOp(&op, a11, 2, x, kept));
  report("sum_axis_past_rank", cnmlCreateNdReduceSumOp(&op, a3, 1, x, kept));
  report("sum_no_axes", cnmlCreateNdReduceSumOp(&op, a1, 0, x, kept));
  report("sum_null_axes", cnmlCreateNdReduceSumOp(&op, nullptr, 1, x, kept));
  report("sum_wrong_output", cnmlCreateNdReduceSumOp(&op, a1, 1, x, wrong));
  report("compile_sum", cnmlCompileBaseOp(sum, CNML_MLU100, 1));
  void *dx = nullptr, *dy = nullptr;
  cnrtMalloc(&dx, 24 * sizeof(float));
  cnrtMalloc(&dy, 8 * sizeof(float));
  std::vector<float> host(24), out(8);
  for (int i = 0; i < 24; ++i) host[i] = static_cast<float>(i);
  cnrtMemcpy(dx, host.data(), 24 * sizeof(float), CNRT_MEM_TRANS_DIR_HOST2DEV);
  report("max_forward_on_sum_op",
         cnmlComputeNdReduceMaxOpForward_V4(sum, x, dx, kept, dy, queue, nullptr));
  report("sum_forward", cnmlComputeNdReduceSumOpForward_V4(sum, x, dx, kept, dy, queue, nullptr));
  cnrtSyncQueue(queue);
  cnrtMemcpy(out.data(), dy, 8 * sizeof(float), CNRT_MEM_TRANS_DIR_DEV2HOST);
  int wrong_sums = 0;  // out[n, 0, w] = sum over c of (12 n + 4 c + w)
  for (int n = 0; n < 2; ++n)
    for (int w = 0; w < 4; ++w) wrong_sums += out[n * 4 + w] != 36.0f * n + 12.0f + 3.0f * w;
  report("sum_mismatches", wrong_sums);

  // ---- log softmax on any axis
  cnmlTensor_t y = tensor(CNML_TENSOR, {2, 3, 4});
  report("log_softmax_ok", cnmlCreateNdLogSoftmaxOp(&op, 0, x, y));
  cnmlDestroyBaseOp(&op);
  report("log_softmax_axis_past_rank", cnmlCreateNdLogSoftmaxOp(&op, 3, x, y));
  report("log_softmax_wrong_output", cnmlCreateNdLogSoftmaxOp(&op, 1, x, kept));

  // ---- pow: equal shapes, or the exponent broadcast to the base
  cnmlTensor_t row = tensor(CNML_TENSOR, {4}), big = tensor(CNML_TENSOR, {2, 2, 3, 4});
  cnmlTensor_t z = tensor(CNML_TENSOR, {2, 3, 4});
  report("pow_ok", cnmlCreatePowOp(&op, x, y, z));
  cnmlDestroyBaseOp(&op);
  report("pow_unequal", cnmlCreatePowOp(&op, x, row, y));
  report("broadcast_pow_ok", cnmlCreateBroadcastPowOp(&op, x, row, y));
  cnmlDestroyBaseOp(&op);
  report("broadcast_pow_base_smaller", cnmlCreateBroadcastPowOp(&op, x, big, y));

  // ---- unary exp, log, abs, neg: same shape
  report("exp_ok", cnmlCreateExpOp(&op, x, y));
  cnmlDestroyBaseOp(&op);
  report("log_wrong_output", cnmlCreateLogOp(&op, x, kept));
  report("abs_wrong_output", cnmlCreateAbsOp(&op, x, kept));
  report("neg_ok", cnmlCreateNegOp(&op, x, y));
  cnmlDestroyBaseOp(&op);

  cnrtFree(dx);
  cnrtFree(dy);
  cnmlDestroyBaseOp(&sum);
  for (cnmlTensor_t* t : {&x, &kept, &dropped, &two, &wrong, &y, &row, &big, &z})
    cnmlDestroyTensor(t);
""" + SDK_PROGRAM_EPILOGUE

EXPECTED = {
    "sum_kept_ok": SUCCESS, "mean_dropped_ok": SUCCESS, "max_two_axes_ok": SUCCESS,
    "min_descending_axes": INVALIDPARAM, "prod_repeated_axis": INVALIDPARAM,
    "sum_axis_past_rank": INVALIDPARAM, "sum_no_axes": INVALIDPARAM,
    "sum_null_axes": INVALIDPARAM, "sum_wrong_output": INVALIDPARAM, "compile_sum": SUCCESS,
    "max_forward_on_sum_op": INVALIDPARAM, "sum_forward": SUCCESS, "sum_mismatches": 0,
    "log_softmax_ok": SUCCESS, "log_softmax_axis_past_rank": INVALIDPARAM,
    "log_softmax_wrong_output": INVALIDPARAM,
    "pow_ok": SUCCESS, "pow_unequal": INVALIDPARAM, "broadcast_pow_ok": SUCCESS,
    "broadcast_pow_base_smaller": INVALIDPARAM,
    "exp_ok": SUCCESS, "log_wrong_output": INVALIDPARAM, "abs_wrong_output": INVALIDPARAM,
    "neg_ok": SUCCESS,
}


def test_sdk_rules_of_the_reduce_and_new_element_wise_ops(tmp_path: Path) -> None:
    assert sdk_program_statuses(PROGRAM, tmp_path) == EXPECTED
