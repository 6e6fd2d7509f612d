"""GatherV2 (embeddings) in the mock SDK and the wrapper: rows of a constant table by int32
indices against numpy's take, on every axis, in fp32 and fp16, alone and fused; an index
outside the table is an SDK error naming the layer and the valid range; the host cast that
makes the indices wraps negative ids as ONNX Gather reads them."""

from __future__ import annotations

import numpy as np
import pytest

from paleozoic import _runtime as rt


def _gather(table: np.ndarray, ids: np.ndarray, axis: int = 0, fuse: bool = False,
            precision: str = "fp32", wrap: int = 0) -> np.ndarray:
    s = rt.Session()
    raw = s.input("ids", list(ids.shape), dtype="int64")
    cast = s.host_cast("ids32", raw, to="int32", shape=list(ids.shape), wrap=wrap)
    gather = s.gather_v2("emb", cast.output, table_shape=list(table.shape), axis=axis)
    gather.config(table)
    relu = s.active("relu", gather.output, function="relu")  # a consumer to fuse with
    s.mark_output(gather.output)
    s.compile_block("host", False, 1, [cast])
    s.compile_block("device", fuse, 4, [gather, relu], precision=precision)
    s.set_input(raw, ids)
    s.run()
    return s.get(gather.output)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("fuse", [False, True])
def test_matches_numpy_take(axis: int, fuse: bool) -> None:
    rng = np.random.default_rng(axis)
    table = (rng.standard_normal((7, 5, 6)) * 1e4).astype(np.float32)
    ids = rng.integers(0, table.shape[axis], size=(3, 4)).astype(np.int64)
    np.testing.assert_array_equal(_gather(table, ids, axis, fuse),
                                  np.take(table, ids, axis=axis))


def test_embedding_in_fp16_rounds_the_table_once() -> None:
    rng = np.random.default_rng(3)
    table = rng.standard_normal((100, 16)).astype(np.float32)
    ids = rng.integers(0, 100, size=(2, 9)).astype(np.int64)
    want = np.take(table, ids, axis=0).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(_gather(table, ids, 0, True, "fp16"), want)


def test_negative_ids_wrap_on_the_host() -> None:
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    ids = np.array([[0, -1, -10, 9]])
    np.testing.assert_array_equal(_gather(table, ids, wrap=10), np.take(table, ids % 10, axis=0))


@pytest.mark.parametrize("bad", [10, -1])
def test_out_of_range_index_is_an_sdk_error_naming_the_layer(bad: int) -> None:
    table = np.zeros((10, 4), np.float32)
    with pytest.raises(rt.SdkError, match=r"emb: cnmlComputeGatherV2OpForward_V4 failed with "
                                          r"CNML_STATUS_INVALIDPARAM.*\[0, 10\)"):
        _gather(table, np.array([[1, bad]]))
    with pytest.raises(rt.SdkError, match="device: cnmlComputeFusionOpForward_V4 failed"):
        _gather(table, np.array([[1, bad]]), fuse=True)


def test_indices_must_be_int32() -> None:
    s = rt.Session()
    ids = s.input("ids", [2], dtype="int64")
    gather = s.gather_v2("emb", ids, table_shape=[4, 3], axis=0)
    gather.config(np.zeros((4, 3), np.float32))
    with pytest.raises(rt.Error, match="emb: indices ids are int64; the SDK gathers by int32"):
        s.compile_block("b", False, 1, [gather])


def test_device_cost_reads_the_rows_not_the_table() -> None:
    s = rt.Session()
    ids = s.input("ids", [1, 8], dtype="int32")
    small = s.gather_v2("small", ids, table_shape=[100, 64], axis=0)
    large = s.gather_v2("large", ids, table_shape=[100000, 64], axis=0)
    assert s.estimate_block([small], 1, False) == pytest.approx(
        s.estimate_block([large], 1, False))
