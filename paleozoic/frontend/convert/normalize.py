"""Converters of BatchNorm, Dropout and TVM's decomposition of LRN."""

from __future__ import annotations

from typing import Any

import numpy as np

from paleozoic.frontend.convert.registry import converter
from paleozoic.frontend.convert.values import Const, Pending, Tup, Value
from paleozoic.frontend.convert.walker import Walker, act_of, ints, stem_from_weight


@converter("relax.nn.batch_norm")
def convert_batch_norm(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    gamma, beta, mean, var = args[1:]
    if not all(isinstance(c, Const) for c in (gamma, beta, mean, var)):
        raise w.fail("batch_norm parameters must be constants")
    if int(call.attrs.axis) != 1:
        raise w.fail("batch_norm is supported on the channel axis (1) only")
    eps = float(call.attrs.epsilon)
    stem = stem_from_weight(gamma.origin) or w.stem_of(x)
    # The SDK's BatchNorm is (x - mean) * var without affine terms: the paper's
    # weighted-BN substitution adds a Scale layer for gamma and beta.
    inv_std = 1.0 / np.sqrt(var.value.astype(np.float64) + eps)
    bn = w.emit("BatchNorm", [x], {"epsilon": eps},
                {"mean": mean.value, "var": inv_std.astype(np.float32)}, stem=stem)
    scale = w.emit("Scale", [bn], {}, {"alpha": gamma.value, "beta": beta.value},
                   stem=stem, suffix="scale")
    return Tup((scale, mean, var))


@converter("relax.nn.dropout")
def convert_dropout(w: Walker, call: Any, args: list[Value]) -> Value:
    x = act_of(w, args[0])
    return Tup((x, x))  # inference: dropout is the identity


@converter("relax.nn.avg_pool3d")
def convert_avg_pool3d(w: Walker, call: Any, args: list[Value]) -> Value:
    return lrn_step(w, call, args[0])


def lrn_step(w: Walker, call: Any, pending: Value, const: Value | None = None) -> Value:
    """One binding of TVM's LRN decomposition:
    x*x, expand_dims, avg_pool3d(size,1,1), squeeze, *alpha, +bias, **beta, x / (.)."""
    if not isinstance(pending, Pending) or pending.pattern != "lrn":
        raise w.fail(f"{call.op.name} is supported inside LRN only")
    op = call.op.name
    scalar = (float(const.value.reshape(())) if isinstance(const, Const)
              and const.value.size == 1 else None)
    if op in ("relax.expand_dims", "relax.squeeze"):
        return pending
    if op == "relax.nn.avg_pool3d":
        size = ints(call.attrs.pool_size)
        if size[1:] != [1, 1] or not call.attrs.count_include_pad:
            raise w.fail("avg_pool3d is supported as LRN's channel window only")
        pending.attrs["size"] = size[0]
        return pending
    if op == "relax.multiply" and scalar is not None:
        # avg_pool divided by size; alpha * S / size is ONNX's LRN form.
        pending.attrs["alpha"] = scalar
        return pending
    if op == "relax.add" and scalar is not None:
        pending.attrs["bias"] = scalar
        return pending
    if op == "relax.power" and scalar is not None:
        pending.attrs["beta"] = scalar
        return pending
    raise w.fail(f"{op} does not fit the LRN pattern")
