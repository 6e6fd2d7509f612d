"""The per-op floor: what one tiny op costs a session, beside onnxruntime. A chain of N ops
that cannot fuse into each other (Softmax, LayerNormalization, a matmul by a small weight;
N = --ops) on a small tensor, timed by `paleozoic bench` in interleaved rounds; prints
microseconds per op for each configuration and for onnxruntime. Not a test.

    python benchmarks/per_op_floor.py [--ops 300] [--shape 4x64] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic.bench import bench_model, resolve_configs


def chain(ops: int, shape: tuple[int, int], seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(ops):
        y = f"t{i}"
        kind = i % 3
        if kind == 0:
            nodes.append(helper.make_node("Softmax", [x], [y], name=f"softmax{i}", axis=-1))
        elif kind == 1:
            scale = numpy_helper.from_array(np.ones(shape[-1], np.float32), f"g{i}")
            inits.append(scale)
            nodes.append(helper.make_node("LayerNormalization", [x, scale.name], [y],
                                          name=f"norm{i}", axis=-1))
        else:
            w = numpy_helper.from_array(
                (rng.standard_normal((shape[-1], shape[-1])) / shape[-1] ** 0.5)
                .astype(np.float32), f"w{i}")
            inits.append(w)
            nodes.append(helper.make_node("MatMul", [x, w.name], [y], name=f"matmul{i}"))
        x = y
    graph = helper.make_graph(
        nodes, "per_op_floor", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--shape", default="4x64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sdk", default="mock,onednn")
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args(argv)
    shape = tuple(int(d) for d in args.shape.split("x"))
    model = chain(args.ops, shape)
    configs = resolve_configs(args.sdk.split(","), ["per-layer", "fuse-all"], ["fp32"])
    report = bench_model(model, f"{args.ops} ops of {args.shape}", configs,
                         threads=args.threads, repeat=args.repeat, rounds=4)
    print(f"{args.ops} Softmax/LayerNorm/MatMul ops on {args.shape}, {args.threads} threads: "
          f"microseconds per op (median forward / ops)")
    print(f"  {'onnxruntime':<24}{report.ort_median_ms * 1e3 / args.ops:8.2f}")
    for r in report.results:
        print(f"  {r.config:<24}{r.median_ms * 1e3 / args.ops:8.2f}   ({r.ratio:.2f}x, "
              f"max abs err {r.max_abs:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
