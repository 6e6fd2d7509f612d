"""SDK rules of the Deconv, NearestNeighbor and Interp ops and their params that the wrapper
never lets through (it validates first), checked on their status codes by a small C program
against the mock SDK, with the CNML-only call forms (no mock extension) computing what CNML
documents: crops, align_corners on or off."""

from __future__ import annotations

from pathlib import Path

from helpers import (INVALIDARG, INVALIDPARAM, SDK_PROGRAM_EPILOGUE, SDK_PROGRAM_PRELUDE,
                     SUCCESS, sdk_program_statuses)

# Prints "<case> <status>" per line; the test compares with the statuses the rules give.
PROGRAM = SDK_PROGRAM_PRELUDE + r"""
static cnrtQueue_t queue = nullptr;

// Runs a compiled one-input op through `forward` on host data; returns its status.
template <typename Forward>
static int run(Forward forward, cnmlBaseOp_t op, cnmlTensor_t in_t, const std::vector<float>& in,
               cnmlTensor_t out_t, std::vector<float>& out) {
  void *din = nullptr, *dout = nullptr;
  cnrtMalloc(&din, in.size() * sizeof(float));
  cnrtMalloc(&dout, out.size() * sizeof(float));
  cnrtMemcpy(din, const_cast<float*>(in.data()), in.size() * sizeof(float),
             CNRT_MEM_TRANS_DIR_HOST2DEV);
  int status = forward(op, in_t, din, out_t, dout, queue, nullptr);
  cnrtSyncQueue(queue);
  cnrtMemcpy(out.data(), dout, out.size() * sizeof(float), CNRT_MEM_TRANS_DIR_DEV2HOST);
  cnrtFree(din);
  cnrtFree(dout);
  return status;
}

static int mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-6f) ++bad;
  return bad;
}

int main() {
  cnmlInit(0);
  cnrtCreateQueue(&queue);
  cnmlBaseOp_t op = nullptr;

  // ---- deconv params: CNML's crops, the mock's _V2 with dilation and output padding
  cnmlDeconvOpParam_t p = nullptr, bad = nullptr, v2 = nullptr;
  report("deconv_param_ok", cnmlCreateDeconvOpParam(&p, 2, 2, 0, 1, 0, 1));
  report("deconv_param_stride0", cnmlCreateDeconvOpParam(&bad, 0, 2, 0, 0, 0, 0));
  report("deconv_param_negative_crop", cnmlCreateDeconvOpParam(&bad, 2, 2, 0, -1, 0, 0));
  report("deconv_v2_dilation0", cnmlCreateDeconvOpParam_V2(&bad, 2, 2, 0, 1, 0, 0, 0, 0, 0, 0));
  report("deconv_v2_outpad_not_below_stride",
         cnmlCreateDeconvOpParam_V2(&bad, 2, 2, 1, 1, 0, 0, 0, 0, 2, 0));
  report("deconv_v2_outpad_below_dilation",
         cnmlCreateDeconvOpParam_V2(&v2, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1));
  report("deconv_param_destroy_null", cnmlDestroyDeconvOpParam(&bad));

  // x [1, 2, 2, 2] -> full 5x5 (k3 s2), cropped by hd = wr = 1 -> [1, 3, 4, 4]
  cnmlTensor_t x = tensor(CNML_TENSOR, {1, 2, 2, 2});
  cnmlTensor_t y = tensor(CNML_TENSOR, {1, 3, 4, 4});
  cnmlTensor_t y_uncropped = tensor(CNML_TENSOR, {1, 3, 5, 5});
  cnmlTensor_t filter = tensor(CNML_FILTER, {2, 3, 3, 3});      // [ci, co, kh, kw]
  cnmlTensor_t conv_layout = tensor(CNML_FILTER, {3, 2, 3, 3});  // [co, ci, kh, kw]
  cnmlTensor_t bias = tensor(CNML_CONST, {3});
  cnmlTensor_t bias4 = tensor(CNML_CONST, {4});
  cnmlTensor_t act_filter = tensor(CNML_TENSOR, {2, 3, 3, 3});
  report("deconv_conv_filter_layout", cnmlCreateDeconvOp(&op, p, x, y, conv_layout, bias));
  report("deconv_wrong_output", cnmlCreateDeconvOp(&op, p, x, y_uncropped, filter, bias));
  report("deconv_bias_length", cnmlCreateDeconvOp(&op, p, x, y, filter, bias4));
  report("deconv_filter_not_const", cnmlCreateDeconvOp(&op, p, x, y, act_filter, bias));
  report("deconv_null_param", cnmlCreateDeconvOp(&op, nullptr, x, y, filter, bias));
  cnmlTensor_t group_filter = tensor(CNML_FILTER, {2, 1, 3, 3});
  cnmlTensor_t y3 = tensor(CNML_TENSOR, {1, 3, 4, 4});
  report("deconv_group_not_dividing",
         cnmlCreateDeconvGroupOp(&op, p, x, y3, group_filter, nullptr, 2));
  cnmlBaseOp_t deconv = nullptr;
  report("deconv_ok_without_bias", cnmlCreateDeconvOp(&deconv, p, x, y, filter, nullptr));
  report("deconv_compile_unbound", cnmlCompileBaseOp(deconv, CNML_MLU100, 4));
  std::vector<float> w(2 * 3 * 9);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) - 2.0f;
  cnmlBindConstData_V2(filter, w.data(), false);
  report("deconv_compile", cnmlCompileBaseOp(deconv, CNML_MLU100, 4));
  std::vector<float> xin = {1, 2, 3, 4, -1, 0.5f, 2, -3}, yout(48);
  report("deconv_conv_forward_refused",
         run(cnmlComputeConvOpForward_V4, deconv, x, xin, y, yout));
  report("deconv_group_forward_runs_plain_op",
         run(cnmlComputeDeconvGroupOpForward_V4, deconv, x, xin, y, yout));
  report("deconv_forward", run(cnmlComputeDeconvOpForward_V4, deconv, x, xin, y, yout));
  // Reference: scatter every input pixel through the 3x3 kernel (stride 2), keep rows and
  // columns 0..3 of the 5x5 full output.
  std::vector<float> want(48, 0.0f);
  for (int co = 0; co < 3; ++co)
    for (int ci = 0; ci < 2; ++ci)
      for (int iy = 0; iy < 2; ++iy)
        for (int ix = 0; ix < 2; ++ix)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              int oy = iy * 2 + ky, ox = ix * 2 + kx;
              if (oy < 4 && ox < 4)
                want[(co * 4 + oy) * 4 + ox] +=
                    xin[(ci * 2 + iy) * 2 + ix] * w[((ci * 3 + co) * 3 + ky) * 3 + kx];
            }
  report("deconv_crop_mismatches", mismatches(yout, want));
  cnmlDestroyDeconvOpParam(&p);  // the op keeps what it needs
  cnmlDestroyDeconvOpParam(&v2);

  // ---- nearest neighbour: width before height; default asymmetric + floor
  cnmlNearestNeighborOpParam_t nn = nullptr, nn_bad = nullptr;
  report("nn_param_zero_size", cnmlCreateNearestNeighborOpParam(&nn_bad, 0, 3));
  report("nn_param_ok", cnmlCreateNearestNeighborOpParam(&nn, 3, 1));
  report("nn_coordinate_mode_bad",
         cnmlSetNearestNeighborCoordinateMode(&nn, static_cast<cnmlInterpCoordinateMode_t>(9)));
  report("nn_round_mode_bad",
         cnmlSetNearestNeighborRoundMode(&nn, static_cast<cnmlNearestNeighborRoundMode_t>(-1)));
  report("nn_align_corner_null", cnmlSetNearestNeighborAlignCorner(nullptr, true));
  cnmlTensor_t row = tensor(CNML_TENSOR, {1, 1, 1, 2});
  cnmlTensor_t row3 = tensor(CNML_TENSOR, {1, 1, 1, 3});
  cnmlTensor_t row3_c2 = tensor(CNML_TENSOR, {1, 2, 1, 3});
  cnmlTensor_t col3 = tensor(CNML_TENSOR, {1, 1, 3, 1});
  report("nn_op_wrong_size", cnmlCreateNearestNeighborOp(&op, row, col3, nn));
  report("nn_op_wrong_channels", cnmlCreateNearestNeighborOp(&op, row, row3_c2, nn));
  report("nn_op_null_param", cnmlCreateNearestNeighborOp(&op, row, row3, nullptr));
  cnmlBaseOp_t nn_default = nullptr, nn_corners = nullptr;
  report("nn_op_ok", cnmlCreateNearestNeighborOp(&nn_default, row, row3, nn));
  report("nn_align_corner", cnmlSetNearestNeighborAlignCorner(&nn, true));
  cnmlCreateNearestNeighborOp(&nn_corners, row, row3, nn);  // the first op kept its mapping
  cnmlDestroyNearestNeighborOpParam(&nn);
  cnmlCompileBaseOp(nn_default, CNML_MLU100, 1);
  cnmlCompileBaseOp(nn_corners, CNML_MLU100, 1);
  std::vector<float> ab = {10, 20}, out3(3);
  report("nn_interp_forward_refused",
         run(cnmlComputeInterpOpForward_V4, nn_default, row, ab, row3, out3));
  report("nn_forward", run(cnmlComputeNearestNeighborOpForward_V4, nn_default, row, ab, row3,
                           out3));
  // x_in = x_out / 1.5 = 0, 0.67, 1.33 -> floor 0, 0, 1
  report("nn_default_mismatches", mismatches(out3, {10, 10, 20}));
  run(cnmlComputeNearestNeighborOpForward_V4, nn_corners, row, ab, row3, out3);
  // x_in = x_out * 1 / 2 = 0, 0.5, 1 -> round half up 0, 1, 1
  report("nn_align_corners_mismatches", mismatches(out3, {10, 20, 20}));

  // ---- bilinear interp: align_corners true / false (asymmetric), and the mode extension
  cnmlInterpOpParam_t ip = nullptr, ip_bad = nullptr;
  report("interp_param_zero_size", cnmlCreateInterpOpParam(&ip_bad, 3, 0, true));
  report("interp_param_ok", cnmlCreateInterpOpParam(&ip, 3, 1, true));
  report("interp_mode_bad",
         cnmlSetInterpCoordinateMode(&ip, static_cast<cnmlInterpCoordinateMode_t>(4)));
  cnmlBaseOp_t corners = nullptr, asym = nullptr, half = nullptr;
  report("interp_op_wrong_size", cnmlCreateInterpOp(&op, row, col3, ip));
  report("interp_op_ok", cnmlCreateInterpOp(&corners, row, row3, ip));
  cnmlDestroyInterpOpParam(&ip);
  cnmlCreateInterpOpParam(&ip, 3, 1, false);
  cnmlCreateInterpOp(&asym, row, row3, ip);
  report("interp_mode_half_pixel", cnmlSetInterpCoordinateMode(&ip, CNML_INTERP_HALF_PIXEL));
  cnmlCreateInterpOp(&half, row, row3, ip);
  cnmlDestroyInterpOpParam(&ip);
  for (cnmlBaseOp_t o : {corners, asym, half}) cnmlCompileBaseOp(o, CNML_MLU100, 2);
  report("interp_nn_forward_refused",
         run(cnmlComputeNearestNeighborOpForward_V4, corners, row, ab, row3, out3));
  report("interp_forward", run(cnmlComputeInterpOpForward_V4, corners, row, ab, row3, out3));
  report("interp_align_corners_mismatches", mismatches(out3, {10, 15, 20}));
  run(cnmlComputeInterpOpForward_V4, asym, row, ab, row3, out3);
  // x_in = 0, 0.667, 1.333 (clamped to 1)
  report("interp_asymmetric_mismatches", mismatches(out3, {10, 10 + 10 * (2.0f / 3), 20}));
  run(cnmlComputeInterpOpForward_V4, half, row, ab, row3, out3);
  // x_in = (x_out + 0.5) / 1.5 - 0.5 = -0.167 (clamped to 0), 0.5, 1.167 (clamped to 1)
  report("interp_half_pixel_mismatches", mismatches(out3, {10, 15, 20}));

  for (cnmlBaseOp_t* o : {&deconv, &nn_default, &nn_corners, &corners, &asym, &half})
    cnmlDestroyBaseOp(o);
  for (cnmlTensor_t* t : {&x, &y, &y_uncropped, &filter, &conv_layout, &bias, &bias4,
                          &act_filter, &group_filter, &y3, &row, &row3, &row3_c2, &col3})
    cnmlDestroyTensor(t);
""" + SDK_PROGRAM_EPILOGUE

EXPECTED = {
    "deconv_param_ok": SUCCESS,
    "deconv_param_stride0": INVALIDPARAM,
    "deconv_param_negative_crop": INVALIDPARAM,
    "deconv_v2_dilation0": INVALIDPARAM,
    "deconv_v2_outpad_not_below_stride": INVALIDPARAM,
    "deconv_v2_outpad_below_dilation": SUCCESS,
    "deconv_param_destroy_null": INVALIDPARAM,
    "deconv_conv_filter_layout": INVALIDPARAM,
    "deconv_wrong_output": INVALIDPARAM,
    "deconv_bias_length": INVALIDPARAM,
    "deconv_filter_not_const": INVALIDPARAM,
    "deconv_null_param": INVALIDPARAM,
    "deconv_group_not_dividing": INVALIDPARAM,
    "deconv_ok_without_bias": SUCCESS,
    "deconv_compile_unbound": INVALIDARG,
    "deconv_compile": SUCCESS,
    "deconv_conv_forward_refused": INVALIDPARAM,
    "deconv_group_forward_runs_plain_op": SUCCESS,
    "deconv_forward": SUCCESS,
    "deconv_crop_mismatches": 0,
    "nn_param_zero_size": INVALIDPARAM,
    "nn_param_ok": SUCCESS,
    "nn_coordinate_mode_bad": INVALIDPARAM,
    "nn_round_mode_bad": INVALIDPARAM,
    "nn_align_corner_null": INVALIDPARAM,
    "nn_op_wrong_size": INVALIDPARAM,
    "nn_op_wrong_channels": INVALIDPARAM,
    "nn_op_null_param": INVALIDPARAM,
    "nn_op_ok": SUCCESS,
    "nn_align_corner": SUCCESS,
    "nn_interp_forward_refused": INVALIDPARAM,
    "nn_forward": SUCCESS,
    "nn_default_mismatches": 0,
    "nn_align_corners_mismatches": 0,
    "interp_param_zero_size": INVALIDPARAM,
    "interp_param_ok": SUCCESS,
    "interp_mode_bad": INVALIDPARAM,
    "interp_op_wrong_size": INVALIDPARAM,
    "interp_op_ok": SUCCESS,
    "interp_mode_half_pixel": SUCCESS,
    "interp_nn_forward_refused": INVALIDPARAM,
    "interp_forward": SUCCESS,
    "interp_align_corners_mismatches": 0,
    "interp_asymmetric_mismatches": 0,
    "interp_half_pixel_mismatches": 0,
}


def test_sdk_rules_of_deconv_and_interp(tmp_path: Path) -> None:
    assert sdk_program_statuses(PROGRAM, tmp_path) == EXPECTED
