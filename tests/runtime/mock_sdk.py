"""The mock SDK's C API driven from Python through ctypes, for tests of the SDK itself (fp16
and int8 numerics, precision rules) that the wrapper does not reach yet.

paleozoic._runtime links the mock SDK statically and exports its C symbols; opening the same
shared object with ctypes gives the very library Python already loaded (one SDK state).
Every call returns its status; `check` raises on a non-zero one.
"""

from __future__ import annotations

import ctypes as C
import functools
import importlib.util
from typing import Any, Sequence

import numpy as np

from paleozoic import _runtime

# cnmlTensorType_t, cnmlDataType_t, cnrtDataType_t, cnmlCastType_t, statuses
TENSOR, FILTER, CONST = 0, 1, 2
FLOAT16, FLOAT32, INT8, INT16 = 1, 2, 4, 6
CNRT_FLOAT16, CNRT_FLOAT32, CNRT_INT8, CNRT_INT16 = 0x12, 0x13, 0x21, 0x22
CAST_F16_TO_F32, CAST_F32_TO_F16 = 4, 6
SUCCESS, INVALIDARG, INVALIDPARAM, UNSUPPORT = 0, 2, 8, 12
CNRT_ERR_INVALID, CNRT_ERR_UNSUPPORTED, CNRT_ERR_INVALID_POINTER = 632007, 632020, 632021
CNRT_ERR_NOMEM = 632008
MLU100 = 3
NO_SPARSE, SPARSE = 0, 1  # cnmlSparseMode_t

NP_OF = {FLOAT32: np.float32, FLOAT16: np.float16, INT8: np.int8}

# A copy of this module loaded with SDK_LIBRARY preset drives another SDK build (the oneDNN
# one: test_onednn_precision.py).
lib = C.CDLL(globals().get("SDK_LIBRARY", _runtime.__file__))
P = C.c_void_p


class SdkError(RuntimeError):
    def __init__(self, fn: str, status: int) -> None:
        super().__init__(f"{fn} returned {status}")
        self.status = status


def call(fn: str, *args: Any) -> int:
    return int(getattr(lib, fn)(*args))


def check(fn: str, *args: Any) -> None:
    status = call(fn, *args)
    if status != 0:
        raise SdkError(fn, status)


def ints(values: Sequence[int]) -> Any:
    return (C.c_int * len(values))(*[int(v) for v in values])


def floats(values: Sequence[float]) -> Any:
    return (C.c_float * len(values))(*[float(v) for v in values])


def handles(values: Sequence[Any]) -> Any:
    return (P * len(values))(*[v.value if isinstance(v, P) else v for v in values])


def f32(x: float) -> C.c_float:
    return C.c_float(x)


_queue = P()
check("cnrtCreateQueue", C.byref(_queue))


def queue() -> P:
    return _queue


def tensor(dims: Sequence[int], dtype: int = FLOAT32, ttype: int = TENSOR) -> P:
    t = P()
    check("cnmlCreateTensor_V2", C.byref(t), ttype)
    check("cnmlSetTensorShape_V2", t, len(dims), ints(dims), None)
    check("cnmlSetTensorDataType", t, dtype)
    return t


_BOUND: list[np.ndarray] = []


def const(array: np.ndarray, dtype: int, ttype: int = CONST) -> P:
    """A FILTER/CONST tensor of the array's shape with the array bound (already in dtype)."""
    array = np.ascontiguousarray(array, dtype=NP_OF[dtype])
    t = tensor(array.shape, dtype, ttype)
    check("cnmlBindConstData_V2", t, array.ctypes.data_as(P), False)
    # The SDK reads FLOAT32 data when the op compiles, after the caller may have dropped
    # both the array and the handle: the helper keeps it for the test process's life.
    _BOUND.append(array)
    return t


def quant_param(position: int, scale: float) -> P:
    q = P()
    check("cnmlCreateQuantizedParam", C.byref(q), position, f32(scale), f32(0.0))
    return q


def create(fn: str, *args: Any) -> P:
    op = P()
    check(fn, C.byref(op), *args)
    return op


def conv_param(stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), sparse: bool = False) -> P:
    """cnmlCreateConvOpParam_V2; with `sparse`, the MLU100 cnmlCreateConvOpParam (per-axis
    pad totals, split evenly)."""
    p = P()
    if sparse:
        top, bottom, left, right = pads
        check("cnmlCreateConvOpParam", C.byref(p), stride[0], stride[1], dilation[0],
              dilation[1], top + bottom, left + right, SPARSE)
        return p
    check("cnmlCreateConvOpParam_V2", C.byref(p), stride[0], stride[1], dilation[0],
          dilation[1], *pads)
    return p


class Buffer:
    """A device buffer holding an array (or room for one)."""

    def __init__(self, nbytes: int) -> None:
        self.ptr = P()
        self.nbytes = nbytes
        assert call("cnrtMalloc", C.byref(self.ptr), C.c_size_t(nbytes)) == 0

    @classmethod
    def of(cls, array: np.ndarray) -> "Buffer":
        array = np.ascontiguousarray(array)
        buf = cls(array.nbytes)
        assert call("cnrtMemcpy", buf.ptr, array.ctypes.data_as(P), C.c_size_t(array.nbytes),
                    0) == 0
        return buf

    def read(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        assert out.nbytes == self.nbytes
        assert call("cnrtMemcpy", out.ctypes.data_as(P), self.ptr, C.c_size_t(out.nbytes),
                    2) == 0
        return out

    def __del__(self) -> None:
        if self.ptr:
            lib.cnrtFree(self.ptr)


def run_fused(ops: Sequence[P], inputs: Sequence[tuple[P, np.ndarray]],
              outputs: Sequence[tuple[P, Sequence[int], Any]], mp: int = 2,
              clock: bool = False, before_compile: Any = None,
              scratch: list[int] | None = None) -> Any:
    """Fuses `ops` (in order) with these inputs and outputs, compiles for mp cores, runs once
    and returns the output arrays (and the simulated microseconds when clock). Calls
    before_compile() just before the compile; appends the fusion's scratch arena bytes to
    `scratch`."""
    f = P()
    check("cnmlCreateFusionOp", C.byref(f))
    try:
        for op in ops:
            check("cnmlFuseOp", op, f)
        in_t = handles([t for t, _ in inputs])
        out_t = handles([t for t, _, _ in outputs])
        check("cnmlSetFusionIO", f, in_t, len(inputs), out_t, len(outputs))
        if before_compile is not None:
            before_compile()
        check("cnmlCompileFusionOp", f, MLU100, mp)
        if scratch is not None:
            size = C.c_size_t()
            check("cnmlMockFusionScratchBytes", f, C.byref(size))
            scratch.append(size.value)
        in_bufs = [Buffer.of(a) for _, a in inputs]
        out_bufs = [Buffer(int(np.prod(shape)) * np.dtype(dt).itemsize)
                    for _, shape, dt in outputs]
        start, end = P(), P()
        check("cnrtCreateNotifier", C.byref(start))
        check("cnrtCreateNotifier", C.byref(end))
        check("cnrtPlaceNotifier", start, _queue)
        check("cnmlComputeFusionOpForward_V4", f, in_t, handles([b.ptr for b in in_bufs]),
              len(inputs), out_t, handles([b.ptr for b in out_bufs]), len(outputs), _queue,
              None)
        check("cnrtPlaceNotifier", end, _queue)
        us = C.c_float()
        check("cnrtNotifierDuration", start, end, C.byref(us))
        check("cnrtDestroyNotifier", C.byref(start))
        check("cnrtDestroyNotifier", C.byref(end))
        results = [b.read(shape, dt) for b, (_, shape, dt) in zip(out_bufs, outputs)]
    finally:
        check("cnmlDestroyFusionOp", C.byref(f))
    return (results, us.value) if clock else results


class InvokeParam(C.Structure):
    """cnrtInvokeFuncParam_t: a forward's `extra` (data parallelism)."""

    _fields_ = [("data_parallelism", C.POINTER(C.c_int)), ("affinity", C.POINTER(C.c_uint)),
                ("end", C.c_void_p)]


PARAM_END = 0xFFFFFFFF  # CNRT_PARAM_END


def invoke_param(dp: int | None, end: int = PARAM_END, affinity: int | None = None) -> Any:
    """A pointer to a cnrtInvokeFuncParam_t at data parallelism dp (None: a null
    data_parallelism) and an affinity mask of cores (None: no mask), kept alive with it."""
    frames = C.c_int(dp or 0)
    mask = C.c_uint(affinity or 0)
    param = InvokeParam(C.pointer(frames) if dp is not None else None,
                        C.pointer(mask) if affinity is not None else None, end)
    pointer = C.pointer(param)
    pointer._keep = (frames, mask, param)  # type: ignore[attr-defined]
    return pointer


def run_base(op: P, forward: str, inp: tuple[P, np.ndarray], out: tuple[P, Sequence[int], Any],
             mp: int = 2, extra: Any = None, compile_op: bool = True) -> tuple[np.ndarray, float]:
    """Compiles one op alone (unless compile_op is False), runs its single-input forward
    with `extra`, returns (output, us)."""
    if compile_op:
        check("cnmlCompileBaseOp", op, MLU100, mp)
    t_in, x = inp
    t_out, shape, dt = out
    bin_, bout = Buffer.of(x), Buffer(int(np.prod(shape)) * np.dtype(dt).itemsize)
    start, end = P(), P()
    check("cnrtCreateNotifier", C.byref(start))
    check("cnrtCreateNotifier", C.byref(end))
    check("cnrtPlaceNotifier", start, _queue)
    check(forward, op, t_in, bin_.ptr, t_out, bout.ptr, _queue, extra)
    check("cnrtPlaceNotifier", end, _queue)
    us = C.c_float()
    check("cnrtNotifierDuration", start, end, C.byref(us))
    check("cnrtDestroyNotifier", C.byref(start))
    check("cnrtDestroyNotifier", C.byref(end))
    return bout.read(shape, dt), us.value


def implementation(op: P) -> str:
    """What computes a compiled op (cnmlMockOpImplementation)."""
    fn = lib.cnmlMockOpImplementation
    fn.restype = C.c_char_p
    return fn(op).decode()


def estimate_base(op: P, precision: int, mp: int) -> float:
    us = C.c_float()
    check("cnmlMockEstimateBaseOpUs_V2", op, precision, mp, C.byref(us))
    return us.value


def explain(ops: Sequence[P], outputs: Sequence[P], mp: int,
            precisions: Sequence[int] | None = None) -> np.ndarray:
    values = (C.c_double * 9)()
    prec = ints(precisions) if precisions is not None else None
    check("cnmlMockExplainFusion_V2", handles(ops), len(ops), prec, handles(outputs),
          len(outputs), mp, values, 9)
    return np.array(values[:])


def cast_host(src: np.ndarray, src_type: int, dst_dtype: Any, dst_type: int,
              param: P | None = None) -> np.ndarray:
    src = np.ascontiguousarray(src)
    dst = np.empty(src.shape, dtype=dst_dtype)
    check("cnrtCastDataType", src.ctypes.data_as(P), src_type, dst.ctypes.data_as(P), dst_type,
          int(src.size), param)
    return dst


def cnrt_param(position: int, scale: float) -> P:
    q = P()
    check("cnrtCreateQuantizedParam", C.byref(q), position, f32(scale), 0)
    return q


@functools.lru_cache(maxsize=None)
def onednn_driver() -> Any:
    """This driver over the oneDNN SDK's shared object instead (one copy per process)."""
    from paleozoic.runner.sdk import runtime_module

    spec = importlib.util.spec_from_file_location("onednn_sdk", __file__)
    module = importlib.util.module_from_spec(spec)
    module.SDK_LIBRARY = runtime_module("onednn").__file__
    spec.loader.exec_module(module)
    return module
