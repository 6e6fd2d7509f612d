"""SDK rules of the sequence-model ops (BatchDot, NdSoftmax, NdLayerNorm, Sqrt, Rsqrt,
Power, Erf, Gelu) on their status codes, by a small C program against the mock SDK: what
the wrapper checks first is also refused by the SDK itself (the raw form or hand-written
CNML code meets these rules)."""

from __future__ import annotations

from pathlib import Path

from helpers import (INVALIDPARAM, SDK_MAIN_START, SDK_PROGRAM_EPILOGUE, SDK_PROGRAM_PRELUDE,
                     SUCCESS, sdk_program_statuses)

PROGRAM = SDK_PROGRAM_PRELUDE + SDK_MAIN_START + r"""
  cnmlBaseOp_t op = nullptr, dot = nullptr, sqrt_op = nullptr;

  // ---- batch dot
  cnmlTensor_t a = tensor(CNML_TENSOR, {2, 1, 3, 4}), b = tensor(CNML_TENSOR, {5, 4, 6});
  cnmlTensor_t bt = tensor(CNML_TENSOR, {5, 6, 4}), b_bad = tensor(CNML_TENSOR, {3, 4, 6});
  cnmlTensor_t ab = tensor(CNML_TENSOR, {2, 5, 3, 6}), ab_wrong = tensor(CNML_TENSOR, {2, 5, 3, 4});
  cnmlTensor_t vec = tensor(CNML_TENSOR, {4}), w = tensor(CNML_CONST, {5, 4, 6});
  report("dot_ok", cnmlCreateBatchDotOp(&dot, a, b, ab, false, false));
  report("dot_trans_b_ok", cnmlCreateBatchDotOp(&op, a, bt, ab, false, true));
  cnmlDestroyBaseOp(&op);
  report("dot_k_mismatch", cnmlCreateBatchDotOp(&op, a, bt, ab, false, false));
  report("dot_batch_no_broadcast", cnmlCreateBatchDotOp(&op, a, b_bad, ab, false, false));
  report("dot_wrong_output", cnmlCreateBatchDotOp(&op, a, b, ab_wrong, false, false));
  report("dot_rank1", cnmlCreateBatchDotOp(&op, vec, b, ab, false, false));
  report("dot_const_operand", cnmlCreateBatchDotOp(&op, a, w, ab, false, false));

  // ---- softmax on any axis, layer norm
  cnmlTensor_t x = tensor(CNML_TENSOR, {2, 3, 8}), y = tensor(CNML_TENSOR, {2, 3, 8});
  report("nd_softmax_ok", cnmlCreateNdSoftmaxOp(&op, 2, x, y));
  cnmlDestroyBaseOp(&op);
  report("nd_softmax_axis_past_rank", cnmlCreateNdSoftmaxOp(&op, 3, x, y));
  report("nd_softmax_negative_axis", cnmlCreateNdSoftmaxOp(&op, -1, x, y));
  cnmlTensor_t g8 = tensor(CNML_CONST, {8}), g24 = tensor(CNML_CONST, {3, 8});
  cnmlTensor_t g_act = tensor(CNML_TENSOR, {8});
  report("layer_norm_ok", cnmlCreateNdLayerNormOp(&op, 2, x, y, g8, g8, 1e-5f));
  cnmlDestroyBaseOp(&op);
  report("layer_norm_two_axes_ok", cnmlCreateNdLayerNormOp(&op, 1, x, y, g24, nullptr, 0.0f));
  cnmlDestroyBaseOp(&op);
  report("layer_norm_scale_size", cnmlCreateNdLayerNormOp(&op, 1, x, y, g8, g8, 1e-5f));
  report("layer_norm_scale_not_const", cnmlCreateNdLayerNormOp(&op, 2, x, y, g_act, g8, 1e-5f));
  report("layer_norm_negative_eps", cnmlCreateNdLayerNormOp(&op, 2, x, y, g8, g8, -1.0f));
  report("layer_norm_axis", cnmlCreateNdLayerNormOp(&op, 3, x, y, g8, g8, 1e-5f));

  // ---- unary ops: same shape; a forward runs only its own creator's op
  cnmlTensor_t other = tensor(CNML_TENSOR, {2, 3, 4});
  report("sqrt_wrong_output", cnmlCreateSqrtOp(&op, x, other));
  report("power_nan", cnmlCreatePowerOp(&op, x, y, NAN));
  report("sqrt_ok", cnmlCreateSqrtOp(&sqrt_op, x, y));
  report("compile_sqrt", cnmlCompileBaseOp(sqrt_op, CNML_MLU100, 1));
  void *dx = nullptr, *dy = nullptr;
  cnrtMalloc(&dx, 48 * sizeof(float));
  cnrtMalloc(&dy, 48 * sizeof(float));
  std::vector<float> host(48, 4.0f), out(48);
  cnrtMemcpy(dx, host.data(), 48 * sizeof(float), CNRT_MEM_TRANS_DIR_HOST2DEV);
  report("erf_forward_on_sqrt_op",
         cnmlComputeErfOpForward_V4(sqrt_op, x, dx, y, dy, queue, nullptr));
  report("gelu_forward_on_sqrt_op",
         cnmlComputeGeluOpForward_V4(sqrt_op, x, dx, y, dy, queue, nullptr));
  report("sqrt_forward", cnmlComputeSqrtOpForward_V4(sqrt_op, x, dx, y, dy, queue, nullptr));
  cnrtSyncQueue(queue);
  cnrtMemcpy(out.data(), dy, 48 * sizeof(float), CNRT_MEM_TRANS_DIR_DEV2HOST);
  int wrong = 0;
  for (float v : out) wrong += v != 2.0f;
  report("sqrt_mismatches", wrong);

  cnrtFree(dx);
  cnrtFree(dy);
  for (cnmlBaseOp_t* o : {&dot, &sqrt_op}) cnmlDestroyBaseOp(o);
  for (cnmlTensor_t* t : {&a, &b, &bt, &b_bad, &ab, &ab_wrong, &vec, &w, &x, &y, &g8, &g24,
                          &g_act, &other})
    cnmlDestroyTensor(t);
""" + SDK_PROGRAM_EPILOGUE

EXPECTED = {
    "dot_ok": SUCCESS, "dot_trans_b_ok": SUCCESS, "dot_k_mismatch": INVALIDPARAM,
    "dot_batch_no_broadcast": INVALIDPARAM, "dot_wrong_output": INVALIDPARAM,
    "dot_rank1": INVALIDPARAM, "dot_const_operand": INVALIDPARAM,
    "nd_softmax_ok": SUCCESS, "nd_softmax_axis_past_rank": INVALIDPARAM,
    "nd_softmax_negative_axis": INVALIDPARAM,
    "layer_norm_ok": SUCCESS, "layer_norm_two_axes_ok": SUCCESS,
    "layer_norm_scale_size": INVALIDPARAM, "layer_norm_scale_not_const": INVALIDPARAM,
    "layer_norm_negative_eps": INVALIDPARAM, "layer_norm_axis": INVALIDPARAM,
    "sqrt_wrong_output": INVALIDPARAM, "power_nan": INVALIDPARAM, "sqrt_ok": SUCCESS,
    "compile_sqrt": SUCCESS, "erf_forward_on_sqrt_op": INVALIDPARAM,
    "gelu_forward_on_sqrt_op": INVALIDPARAM, "sqrt_forward": SUCCESS, "sqrt_mismatches": 0,
}


def test_sdk_rules_of_the_sequence_ops(tmp_path: Path) -> None:
    assert sdk_program_statuses(PROGRAM, tmp_path) == EXPECTED
