"""fp32 error of each layer kind against a float64 truth, beside onnxruntime's.

Every case is a small ONNX model with inputs drawn to stress precision: long reductions,
large magnitudes, offsets that cancel, many channels per group, saturating activations.
All cases are merged into one model so one compile and one g++ build serve them all; each
output is then compared with the float64 reference (paleozoic.accuracy.truth), as are
onnxruntime's optimised and unoptimised results on the same inputs.

The error measure is the largest absolute error relative to the largest magnitude of the
true output (what a user sees on a network's output). A kind is as accurate as
onnxruntime when its error is at most `ALLOWED_FACTOR` times the larger of onnxruntime's
two errors, plus one fp32 rounding at the output's scale (`ULP_FLOOR`), since where
onnxruntime happens to round exactly, one correctly rounded result may still differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic.accuracy.verify import TRUTH_FACTOR as ALLOWED_FACTOR
from paleozoic.accuracy.verify import ULP as ULP_FLOOR
from paleozoic.accuracy.verify import truth_error as relative_error

logger = logging.getLogger(__name__)



@dataclass
class PrecisionCase:
    name: str
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]


@dataclass
class PrecisionRow:
    name: str
    ours: float
    ort_optimised: float
    ort_unoptimised: float

    @property
    def limit(self) -> float:
        return ALLOWED_FACTOR * max(self.ort_optimised, self.ort_unoptimised) + ULP_FLOOR

    @property
    def ratio(self) -> float:
        return self.ours / max(self.ort_optimised, self.ort_unoptimised, ULP_FLOOR)

    @property
    def passed(self) -> bool:
        return bool(np.isfinite(self.ours)) and self.ours <= self.limit


# ---- case construction -------------------------------------------------------------------

def single_node(name: str, op_type: str, inputs: dict[str, np.ndarray],
                weights: dict[str, np.ndarray] | None = None, opset: int = 17,
                **attrs: object) -> PrecisionCase:
    """One node over `inputs` (graph inputs, in order) then `weights` (initializers)."""
    weights = weights or {}
    node = helper.make_node(op_type, [*inputs, *weights], ["out"], name=name, **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
         for k, v in inputs.items()],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), k)
         for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    # The output's shape, which the merged model's checker wants declared.
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    out_type = next(v for v in (*inferred.graph.value_info, *inferred.graph.output)
                    if v.name == "out" and v.type.tensor_type.HasField("shape"))
    model.graph.output[0].CopyFrom(out_type)
    return PrecisionCase(name, model, {k: np.asarray(v, dtype=np.float32)
                                       for k, v in inputs.items()})


def kind_cases(seed: int = 0) -> list[PrecisionCase]:
    """One or more adversarial cases per layer kind the frontend produces."""
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal

    def he(*shape: int) -> np.ndarray:
        return normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))

    cases: list[PrecisionCase] = []
    add = cases.append
    # Long reductions: K = 512 * 9 and 2048, inputs all positive (errors do not cancel).
    add(single_node("conv3x3_k4608_positive", "Conv", {"x": rng.random((1, 512, 14, 14))},
                    {"w": he(64, 512, 3, 3), "b": normal(64)}, pads=[1, 1, 1, 1]))
    add(single_node("conv1x1_k2048_large", "Conv", {"x": normal((1, 2048, 7, 7)) * 1e3},
                    {"w": he(96, 2048, 1, 1), "b": normal(96) * 1e3}))
    # Bias far larger than the products: the order of bias and sum matters.
    add(single_node("conv3x3_bias_offset", "Conv", {"x": normal((1, 32, 16, 16))},
                    {"w": he(32, 32, 3, 3), "b": 1e3 + normal(32)}, pads=[1, 1, 1, 1]))
    # Grouped: 8 channels per group (RegNetY), and 64 per group.
    add(single_node("conv_grouped_8pg", "Conv", {"x": normal((1, 208, 14, 14)) * 10},
                    {"w": he(208, 8, 3, 3), "b": normal(208)}, group=26, pads=[1, 1, 1, 1]))
    add(single_node("conv_grouped_64pg", "Conv", {"x": rng.random((1, 256, 14, 14))},
                    {"w": he(256, 64, 3, 3)}, group=4, pads=[1, 1, 1, 1], strides=[2, 2]))
    add(single_node("conv_depthwise5x5", "Conv", {"x": normal((1, 96, 28, 28)) * 100},
                    {"w": he(96, 1, 5, 5), "b": normal(96)}, group=96, pads=[2, 2, 2, 2]))
    # The bias-last order in the depthwise, transposed-convolution and GEMV paths too.
    add(single_node("conv_depthwise_bias_offset", "Conv", {"x": normal((1, 64, 16, 16))},
                    {"w": he(64, 1, 3, 3), "b": 1e3 + normal(64)}, group=64, pads=[1] * 4))
    add(single_node("convtranspose_bias_offset", "ConvTranspose",
                    {"x": normal((1, 64, 8, 8))}, {"w": he(64, 16, 4, 4), "b": 1e3 + normal(16)},
                    strides=[2, 2], pads=[1, 1, 1, 1]))
    add(single_node("gemm_k4096_bias_offset", "Gemm", {"x": normal((1, 4096))},
                    {"w": he(32, 4096), "b": 1e3 + normal(32)}, transB=1))
    add(single_node("conv7x7_s2_rgb", "Conv", {"x": normal((1, 3, 64, 64))},
                    {"w": he(64, 3, 7, 7)}, pads=[3, 3, 3, 3], strides=[2, 2]))
    # Fully connected: VGG's K = 25088 on positive inputs, and a large-magnitude Gemm.
    add(single_node("gemm_k25088_positive", "Gemm", {"x": rng.random((1, 25088))},
                    {"w": he(64, 25088), "b": normal(64)}, transB=1))
    add(single_node("gemm_batch8_large", "Gemm", {"x": normal((8, 1024)) * 1e3},
                    {"w": he(100, 1024), "b": normal(100)}, transB=1))
    add(single_node("matmul_k4096", "MatMul", {"x": rng.random((4, 4096)) + 1.0},
                    {"w": he(4096, 48)}))
    # Reductions over large planes with a large common offset.
    add(single_node("global_avgpool_56x56_offset", "GlobalAveragePool",
                    {"x": 100.0 + normal((1, 16, 56, 56))}))
    add(single_node("global_avgpool_7x7", "GlobalAveragePool",
                    {"x": normal((1, 512, 7, 7)) * 10}))
    add(single_node("avgpool_7x7_offset", "AveragePool", {"x": 1e3 + normal((1, 16, 28, 28))},
                    kernel_shape=[7, 7], strides=[1, 1], pads=[3, 3, 3, 3]))
    add(single_node("avgpool_3x3_s2", "AveragePool", {"x": normal((1, 16, 28, 28))},
                    kernel_shape=[3, 3], strides=[2, 2], count_include_pad=1, pads=[1] * 4))
    add(single_node("maxpool_3x3_s2", "MaxPool", {"x": normal((1, 16, 28, 28)) * 1e3},
                    kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    add(single_node("reducemean_hw_offset", "ReduceMean", {"x": 100.0 + normal((1, 32, 40, 40))},
                    axes=[2, 3], keepdims=1, opset=13))
    # Normalisation with a large mean and a small variance: (x - mean) cancels.
    c = 32
    mean = 1e3 + normal(c)
    add(single_node("batchnorm_cancelling", "BatchNormalization",
                    {"x": mean[None, :, None, None] + normal((1, c, 16, 16)) * 0.05},
                    {"g": rng.uniform(0.5, 1.5, c), "beta": normal(c), "m": mean,
                     "v": rng.uniform(1e-4, 1e-2, c)}, epsilon=1e-5))
    add(single_node("batchnorm_wide", "BatchNormalization", {"x": normal((2, c, 16, 16)) * 30},
                    {"g": normal(c) * 3, "beta": normal(c) * 10, "m": normal(c) * 10,
                     "v": rng.uniform(0.1, 100, c)}, epsilon=1e-3))
    add(single_node("lrn_large", "LRN", {"x": normal((1, 64, 14, 14)) * 30},
                    size=5, alpha=1e-4, beta=0.75, bias=2.0))
    add(single_node("lrn_strong", "LRN", {"x": normal((1, 32, 14, 14)) * 3},
                    size=3, alpha=0.5, beta=0.75, bias=1.0))
    # Activations over saturating ranges.
    wide_x = normal((1, 16, 32, 32)) * 20
    for op in ("Sigmoid", "Tanh", "Relu", "HardSigmoid", "HardSwish"):
        add(single_node(f"{op.lower()}_saturating", op, {"x": wide_x}))
    add(single_node("leakyrelu", "LeakyRelu", {"x": wide_x}, alpha=0.1))
    add(single_node("prelu", "PRelu", {"x": wide_x}, {"s": rng.uniform(0, 0.5, (16, 1, 1))}))
    add(single_node("clip_relu6", "Clip", {"x": wide_x},
                    {"lo": np.array(0.0), "hi": np.array(6.0)}))
    # Softmax over 1000 classes with large logits, and over channels of a map.
    add(single_node("softmax_1000_large", "Softmax", {"x": normal((2, 1000)) * 30}, axis=1))
    # A classifier that is not sure: 1,000 near-equal probabilities, whose common sum's
    # rounding error lands on every output.
    add(single_node("softmax_1000_flat", "Softmax", {"x": rng.random((2, 1000)) * 0.1},
                    axis=1))
    add(single_node("softmax_channels", "Softmax", {"x": normal((1, 19, 8, 8)) * 5}, axis=1))
    # Element-wise with broadcasting (the squeeze-and-excite gate) and per-channel constants.
    add(single_node("mul_se_gate", "Mul", {"x": normal((1, 64, 14, 14)) * 10,
                                           "g": rng.random((1, 64, 1, 1))}))
    add(single_node("add_residual_large", "Add", {"x": normal((1, 32, 8, 8)) * 1e4,
                                                  "y": normal((1, 32, 8, 8))}))
    add(single_node("div_channel_const", "Div", {"x": normal((1, 32, 8, 8)) * 10},
                    {"d": rng.uniform(0.1, 10, (1, 32, 1, 1))}))
    add(single_node("sub_channel_const", "Sub", {"x": 1e3 + normal((1, 32, 8, 8))},
                    {"m": 1e3 + normal((1, 32, 1, 1)) * 0.01}))
    add(single_node("mul_add_affine", "Mul", {"x": normal((1, 32, 8, 8)) * 100},
                    {"a": normal((1, 32, 1, 1))}))
    # Spatial resampling and transposed convolution (overlapping col2im sums).
    add(single_node("resize_bilinear_x4", "Resize", {"x": normal((1, 8, 16, 16)) * 100},
                    {"roi": np.zeros(0), "scales": np.array([1, 1, 4, 4])},
                    mode="linear", coordinate_transformation_mode="half_pixel"))
    add(single_node("convtranspose_4x4_s2", "ConvTranspose", {"x": rng.random((1, 256, 8, 8))},
                    {"w": he(256, 32, 4, 4), "b": normal(32)}, strides=[2, 2],
                    pads=[1, 1, 1, 1]))
    add(single_node("concat_channels", "Concat", {"x": normal((1, 8, 4, 4)),
                                                  "y": normal((1, 24, 4, 4)) * 1e3}, axis=1))
    # Sequence models: attention's two-activation products (a long K, broadcast batch axes
    # and large magnitudes), softmax on the key axis of a 3-D tensor, layer norm of rows
    # with a large mean, and the element-wise math ops over wide ranges.
    add(single_node("batch_dot_k4096", "MatMul", {"a": rng.random((2, 4, 4096)) + 1.0,
                                                  "b": normal((2, 4096, 8))}))
    add(single_node("batch_dot_broadcast_large", "MatMul", {"a": normal((2, 1, 8, 64)) * 1e3,
                                                            "b": normal((4, 64, 5)) * 1e3}))
    add(single_node("softmax_keys_large", "Softmax", {"x": normal((2, 16, 512)) * 30}, axis=-1))
    add(single_node("layernorm_768_offset", "LayerNormalization",
                    {"x": 1e4 + normal((2, 8, 768)) * 100}, {"s": normal(768), "b": normal(768)},
                    axis=-1, epsilon=1e-5))
    add(single_node("erf_wide", "Erf", {"x": normal((4, 1000)) * 3}))
    add(single_node("sqrt_wide", "Sqrt", {"x": rng.random((4, 1000)) * 1e4}))
    add(single_node("pow3_wide", "Pow", {"x": normal((4, 1000)) * 10}, {"e": np.array(3.0)}))
    # A long row of large values over a large offset: a float accumulator drops the terms.
    add(single_node("reducemean_1e4_offset", "ReduceMean",
                    {"x": 1e6 + normal((4, 10000)) * 1e3}, axes=[1], keepdims=0, opset=13))
    add(single_node("logsoftmax_keys_large", "LogSoftmax", {"x": normal((2, 16, 512)) * 30},
                    axis=-1))
    # 1-D layers over [N, C, L] (run as 2-D ones of height 1): long reductions along time,
    # a bias far above the products, raw audio with an offset, and instance normalisation
    # of a large mean over a unit spread (fp32 E[x^2] - E[x]^2 would cancel).
    add(single_node("conv1d_k5_s2_bias_offset", "Conv", {"x": normal((1, 64, 400))},
                    {"w": he(64, 64, 5), "b": 1e3 + normal(64)}, strides=[2], pads=[2, 2]))
    add(single_node("conv1d_k10_s5_audio_offset", "Conv", {"x": 1e2 + normal((1, 1, 4000))},
                    {"w": he(32, 1, 10)}, strides=[5]))
    add(single_node("convtranspose1d_k4_s2", "ConvTranspose", {"x": rng.random((1, 64, 50))},
                    {"w": he(64, 32, 4), "b": normal(32)}, strides=[2], pads=[1, 1]))
    add(single_node("avgpool1d_k7_offset", "AveragePool", {"x": 1e3 + normal((1, 16, 300))},
                    kernel_shape=[7], pads=[3, 3]))
    add(single_node("maxpool1d_k3_s2", "MaxPool", {"x": normal((1, 16, 300)) * 1e3},
                    kernel_shape=[3], strides=[2], pads=[1, 1]))
    add(single_node("global_avgpool1d_3000_offset", "GlobalAveragePool",
                    {"x": 100.0 + normal((1, 16, 3000))}))
    add(single_node("instancenorm_1d_offset", "InstanceNormalization",
                    {"x": 1e3 + normal((1, 32, 400))}, {"s": normal(32), "b": normal(32)},
                    epsilon=1e-5))
    return cases


# ---- measurement ------------------------------------------------------------------------

def measure(cases: list[PrecisionCase], work: Path,
            run: Callable[[onnx.ModelProto, Path, dict[str, np.ndarray]], list[np.ndarray]]
            | None = None) -> list[PrecisionRow]:
    """Compiles all cases as one merged model (per-layer plan), runs it once, and returns
    each case's error beside onnxruntime's, all against float64."""
    from paleozoic.accuracy.truth import Float64Reference
    from paleozoic_testing.backend_suite import merge_models
    from paleozoic.accuracy.verify import onnxruntime_session

    merged = merge_models([c.model for c in cases])
    feeds = {f"m{i}_{k}": np.asarray(v, dtype=np.float32)
             for i, c in enumerate(cases) for k, v in c.feeds.items()}
    ours = (run or _run_paleozoic)(merged, work, feeds)
    truth = Float64Reference(merged).run(feeds)
    optimised = onnxruntime_session(merged).run(None, feeds)
    plain = onnxruntime_session(merged, optimize=False).run(None, feeds)
    return [PrecisionRow(c.name, relative_error(ours[i], truth[i]),
                         relative_error(optimised[i], truth[i]),
                         relative_error(plain[i], truth[i]))
            for i, c in enumerate(cases)]


def _run_paleozoic(model: onnx.ModelProto, work: Path,
                   feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from paleozoic.pipeline import build_session, compile_model, run_session

    compile_model(model, work, plan="per-layer")
    build_session(work)
    inputs = [i.name for i in model.graph.input
              if i.name not in {t.name for t in model.graph.initializer}]
    return run_session(work, [feeds[name] for name in inputs]).outputs


def markdown_table(rows: list[PrecisionRow]) -> str:
    lines = ["| case | Paleozoic | onnxruntime opt | onnxruntime unopt | ratio | verdict |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r.name} | {r.ours:.2e} | {r.ort_optimised:.2e} | "
                     f"{r.ort_unoptimised:.2e} | {r.ratio:.2f} | "
                     f"{'ok' if r.passed else 'WORSE'} |")
    return "\n".join(lines)
