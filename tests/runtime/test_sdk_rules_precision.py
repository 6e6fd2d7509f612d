"""The mock SDK's precision rules (cnml.h, cnrt.h): dtypes per tensor type, quantised params,
the computing dtype of an operand, op-level dtype agreement, the int8 prerequisites checked at
compile, Cast types and the host casts; each on its status code."""

from __future__ import annotations

import ctypes as C

import numpy as np

import mock_sdk as m
from mock_sdk import INVALIDARG, INVALIDPARAM, SUCCESS, UNSUPPORT

F16 = np.float16


def status(fn, *args):
    return m.call(fn, *args)


def fresh(ttype=m.TENSOR, dims=(1, 4, 4, 4)):
    t = m.P()
    m.check("cnmlCreateTensor_V2", C.byref(t), ttype)
    m.check("cnmlSetTensorShape_V2", t, len(dims), m.ints(dims), None)
    return t


def test_tensor_dtypes_by_type():
    # Activations also take int32 (GatherV2's indices) and uint8 (8 = CNML_DATA_UINT8).
    for ttype, allowed in [(m.TENSOR, {m.FLOAT32, m.FLOAT16, 7, 8}),
                           (m.FILTER, {m.FLOAT32, m.FLOAT16, m.INT8}),
                           (m.CONST, {m.FLOAT32, m.FLOAT16})]:
        for dtype in (m.FLOAT16, m.FLOAT32, 3, m.INT8, m.INT16, 7, 8, 11):
            expect = SUCCESS if dtype in allowed else UNSUPPORT
            assert status("cnmlSetTensorDataType", fresh(ttype), dtype) == expect, (ttype, dtype)
    bound = m.const(np.ones(3, np.float32), m.FLOAT32)
    assert status("cnmlSetTensorDataType", bound, m.FLOAT16) == INVALIDARG
    assert status("cnmlSetTensorDataType", bound, m.FLOAT32) == SUCCESS


def test_quantized_param_ranges():
    q = m.P()
    assert status("cnmlCreateQuantizedParam", None, 0, m.f32(1), m.f32(0)) == INVALIDPARAM
    for pos, scale in [(33, 1.0), (-33, 1.0), (0, 0.0), (0, -1.0), (0, float("inf")),
                       (0, float("nan"))]:
        assert status("cnmlCreateQuantizedParam", C.byref(q), pos, m.f32(scale),
                      m.f32(0)) == INVALIDARG, (pos, scale)
    assert status("cnmlCreateQuantizedParam", C.byref(q), 0, m.f32(1), m.f32(0.5)) == UNSUPPORT
    assert status("cnmlCreateQuantizedParam", C.byref(q), -32, m.f32(1), m.f32(0)) == SUCCESS
    assert status("cnmlDestroyQuantizedParam", C.byref(q)) == SUCCESS
    assert status("cnmlDestroyQuantizedParam", C.byref(q)) == INVALIDPARAM
    f = fresh(m.FILTER)
    assert status("cnmlSetQuantizedPosition", f, 40) == INVALIDARG
    assert status("cnmlSetQuantizedScale", f, m.f32(0)) == INVALIDARG
    assert status("cnmlSetQuantizedPositionByChannel", f, m.ints([0, 99]), 2) == INVALIDARG
    assert status("cnmlSetQuantizedScaleByChannel", f, m.floats([1, -1]), 2) == INVALIDARG
    assert status("cnmlSetQuantizedPositionByChannel", f, None, 2) == INVALIDPARAM
    assert status("cnmlSetQuantizedScaleByChannel", f, m.floats([1]), 0) == INVALIDPARAM
    assert status("cnmlSetQuantizedPosition", None, 0) == INVALIDPARAM
    # cnrt
    r = m.P()
    assert status("cnrtCreateQuantizedParam", None, 0, m.f32(1), 0) == m.CNRT_ERR_INVALID_POINTER
    assert status("cnrtCreateQuantizedParam", C.byref(r), 33, m.f32(1), 0) == m.CNRT_ERR_INVALID
    assert status("cnrtCreateQuantizedParam", C.byref(r), 0, m.f32(0), 0) == m.CNRT_ERR_INVALID
    assert status("cnrtCreateQuantizedParam", C.byref(r), 0, m.f32(1), 3) == m.CNRT_ERR_UNSUPPORTED


def test_host_cast_errors():
    x = np.ones(4, np.float32)
    out = np.empty(4, np.int8)
    ptr = x.ctypes.data_as(m.P)
    dst = out.ctypes.data_as(m.P)
    assert status("cnrtCastDataType", ptr, m.CNRT_FLOAT32, dst, m.CNRT_INT8, 4,
                  None) == m.CNRT_ERR_INVALID
    assert status("cnrtCastDataType", None, m.CNRT_FLOAT32, dst, m.CNRT_FLOAT16, 4,
                  None) == m.CNRT_ERR_INVALID_POINTER
    assert status("cnrtCastDataType", ptr, m.CNRT_FLOAT32, dst, m.CNRT_FLOAT16, -1,
                  None) == m.CNRT_ERR_INVALID
    assert status("cnrtCastDataType", ptr, m.CNRT_FLOAT32, dst, m.CNRT_INT16, 4,
                  None) == m.CNRT_ERR_UNSUPPORTED
    assert status("cnrtCastDataType", ptr, m.CNRT_FLOAT16, dst, m.CNRT_INT8, 4,
                  m.cnrt_param(0, 1.0)) == m.CNRT_ERR_UNSUPPORTED


def conv_op(in_dtype=m.FLOAT16, out_dtype=m.FLOAT16, filter_dtype=m.INT8, bias_dtype=m.FLOAT16,
            co=4):
    tin, tout = m.tensor([1, 4, 5, 5], in_dtype), m.tensor([1, co, 5, 5], out_dtype)
    w = np.ones((co, 4, 3, 3))
    tf = m.const(w, filter_dtype, m.FILTER)
    tb = m.const(np.zeros(co), bias_dtype)
    op = m.P()
    s = status("cnmlCreateConvOp", C.byref(op), m.conv_param(pads=(1, 1, 1, 1)), tin, tout, tf, tb)
    return s, op, tin, tout, tf


def test_activations_share_one_dtype_and_consts_match():
    s, *_ = conv_op(m.FLOAT16, m.FLOAT32)
    assert s == INVALIDARG
    a, b, o = m.tensor([2, 3], m.FLOAT16), m.tensor([2, 3]), m.tensor([2, 3], m.FLOAT16)
    assert status("cnmlCreateAddOp", C.byref(m.P()), a, b, o) == INVALIDARG
    # fp16 op with fp32 consts, fp32 op with fp16 consts: refused at compile.
    for act, const in [(m.FLOAT16, m.FLOAT32), (m.FLOAT32, m.FLOAT16)]:
        s, op, *_ = conv_op(act, act, const, const)
        assert s == SUCCESS
        assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == INVALIDARG
    s, op, *_ = conv_op(m.FLOAT16, m.FLOAT16, m.FLOAT16, m.FLOAT16)
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == SUCCESS


def test_computing_dtype_rules():
    q = m.quant_param(0, 1.0)
    s, op, tin, tout, tf = conv_op()
    assert s == SUCCESS
    assert status("cnmlSetOperationComputingDataType", op, tout, m.INT8, q) == INVALIDPARAM
    assert status("cnmlSetOperationComputingDataType", op, tin, m.INT8, None) == INVALIDPARAM
    assert status("cnmlSetOperationComputingDataType", op, tin, m.INT16, q) == UNSUPPORT
    assert status("cnmlSetOperationComputingDataType", None, tin, m.INT8, q) == INVALIDPARAM
    # An INT8 filter without int8 compute, and int8 compute without the filter's params.
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == INVALIDARG
    assert status("cnmlSetOperationComputingDataType", op, tin, m.INT8, q) == SUCCESS
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == INVALIDARG  # no position/scale
    m.check("cnmlSetQuantizedPosition", tf, -2)
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == INVALIDARG  # no scale yet
    m.check("cnmlSetQuantizedScaleByChannel", tf, m.floats([1, 1, 1]), 3)  # 3 != 4 channels
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == INVALIDARG
    m.check("cnmlSetQuantizedScaleByChannel", tf, m.floats([1, 2, 1, 1]), 4)
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == SUCCESS
    assert status("cnmlSetOperationComputingDataType", op, tin, m.INT8, q) == INVALIDARG
    # After fusing.
    s, op2, tin2, *_ = conv_op()
    f = m.P()
    m.check("cnmlCreateFusionOp", C.byref(f))
    m.check("cnmlFuseOp", op2, f)
    assert status("cnmlSetOperationComputingDataType", op2, tin2, m.INT8, q) == INVALIDARG
    m.check("cnmlDestroyFusionOp", C.byref(f))
    # int8 needs FLOAT16 activations and a FLOAT16 bias.
    s, op3, tin3, _, tf3 = conv_op(m.FLOAT32, m.FLOAT32)
    m.check("cnmlSetQuantizedPosition", tf3, 0)
    m.check("cnmlSetQuantizedScale", tf3, m.f32(1))
    m.check("cnmlSetOperationComputingDataType", op3, tin3, m.INT8, q)
    assert status("cnmlCompileBaseOp", op3, m.MLU100, 1) == INVALIDARG
    s, op4, tin4, _, tf4 = conv_op(bias_dtype=m.FLOAT32)
    m.check("cnmlSetQuantizedPosition", tf4, 0)
    m.check("cnmlSetQuantizedScale", tf4, m.f32(1))
    m.check("cnmlSetOperationComputingDataType", op4, tin4, m.INT8, q)
    assert status("cnmlCompileBaseOp", op4, m.MLU100, 1) == INVALIDARG
    # Only Conv, ConvGroup and Mlp have an int8 mode.
    a, o = m.tensor([1, 4], m.FLOAT16), m.tensor([1, 4], m.FLOAT16)
    relu = m.create("cnmlCreateActiveOp", 2, a, o)
    assert status("cnmlSetOperationComputingDataType", relu, a, m.INT8, q) == UNSUPPORT


def test_int8_reduction_that_could_overflow_is_unsupported():
    k = 140000
    tin, tout = m.tensor([1, k], m.FLOAT16), m.tensor([1, 1], m.FLOAT16)
    tf = m.const(np.ones((1, k)), m.INT8, m.FILTER)
    m.check("cnmlSetQuantizedPosition", tf, 0)
    m.check("cnmlSetQuantizedScale", tf, m.f32(1))
    op = m.create("cnmlCreateMlpOp", tin, tout, tf, None, m.NO_SPARSE)
    m.check("cnmlSetOperationComputingDataType", op, tin, m.INT8, m.quant_param(0, 1.0))
    assert status("cnmlCompileBaseOp", op, m.MLU100, 1) == UNSUPPORT


def test_cast_op_rules():
    a32, a16 = m.tensor([2, 3]), m.tensor([2, 3], m.FLOAT16)
    op = m.P()
    for cast in (0, 1, 3, 5, 7, 8):
        assert status("cnmlCreateCastOp", C.byref(op), cast, a32, a16) == UNSUPPORT, cast
    assert status("cnmlCreateCastOp", C.byref(op), 2, a32, a16) == INVALIDPARAM
    assert status("cnmlCreateCastOp", C.byref(op), 99, a32, a16) == INVALIDPARAM
    assert status("cnmlCreateCastOp", C.byref(op), m.CAST_F16_TO_F32, a32, a16) == INVALIDARG
    assert status("cnmlCreateCastOp", C.byref(op), m.CAST_F32_TO_F16, a32,
                  m.tensor([3, 2], m.FLOAT16)) == INVALIDPARAM
    assert status("cnmlCreateCastOp", C.byref(op), m.CAST_F32_TO_F16, a32, a16) == SUCCESS


def test_forward_checks_tensor_dtype_and_buffer_size():
    t16, o16 = m.tensor([1, 8], m.FLOAT16), m.tensor([1, 8], m.FLOAT16)
    op = m.create("cnmlCreateActiveOp", 2, t16, o16)
    m.check("cnmlCompileBaseOp", op, m.MLU100, 1)
    small, out = m.Buffer(16), m.Buffer(16)  # 8 binary16 values each
    q = m.queue()
    assert status("cnmlComputeActiveOpForward_V4", op, t16, small.ptr, o16, out.ptr, q,
                  None) == SUCCESS
    t32 = m.tensor([1, 8])
    assert status("cnmlComputeActiveOpForward_V4", op, t32, small.ptr, o16, out.ptr, q,
                  None) == INVALIDPARAM
    tiny = m.Buffer(8)
    assert status("cnmlComputeActiveOpForward_V4", op, t16, tiny.ptr, o16, out.ptr, q,
                  None) == INVALIDPARAM
