"""Checking an emitted session against onnxruntime and, where they disagree, a float64 truth.

The verdict for each output, in order:
1. Within RTOL/ATOL of onnxruntime (optimised graph): pass.
2. Otherwise the model is evaluated in float64 (paleozoic.accuracy.truth) and the session's
   error against that truth is compared with onnxruntime's own, optimised and unoptimised:
   the output passes when its error is at most TRUTH_FACTOR times the larger of the two,
   plus one fp32 rounding at the output's scale. Two fp32 implementations that sum in a
   different order legitimately differ on deep, sensitive networks; this asks which of them
   is further from the right answer instead of trusting either.
3. Only when the float64 evaluation itself is impossible (an operator onnx's reference
   evaluator lacks) does the older rule apply: within NOISE_FACTOR times onnxruntime's own
   optimised/unoptimised difference; the report says so.
Non-finite outputs always fail.

A session whose plan computes some blocks in fp16 or int8 cannot be held to fp32 tolerances:
it must equal, bit for bit, the same plan run in-process through the runtime (with the
quantisation parameters of its weights.bin), which checks the emitted code; its distance
from onnxruntime's fp32 (SQNR, cosine, top-1) is reported, not judged (`paleozoic debug`
and `tune --accuracy-budget` are where accuracy is judged).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from paleozoic.errors import ModelLoadError
from paleozoic.pipeline import run_session

logger = logging.getLogger(__name__)

RTOL = 1e-3
ATOL = 1e-5
TRUTH_FACTOR = 2.0
ULP = 2.0 ** -23
# The error against float64 that always passes, relative to the largest true magnitude: 16
# fp32 units there. Two correct fp32 implementations that sum in a different order land
# anywhere below it on a well-conditioned network, and onnxruntime's own error is luck of
# its order: a ResNeXt-50 export on oneDNN had 9.9e-7 where onnxruntime had 3.9e-7 on one
# seed and less than it on the next, a verdict that flipped with the seed.
FP32_FLOOR = 16 * ULP


def truth_limit(*ort_errors: float) -> float:
    """The largest error against float64 an fp32 output may have: twice onnxruntime's
    (the larger of its modes) plus one rounding, and never less than FP32_FLOOR."""
    return max(TRUTH_FACTOR * max(ort_errors) + ULP, FP32_FLOOR)
# Only without a float64 truth: deep networks with unnormalised outputs accumulate fp32
# rounding that depends only on the order of summation (ResNet-50 from PyTorch: 2.9e-5
# between onnxruntime's two modes).
NOISE_FACTOR = 2.0
DISTRIBUTIONS = ("normal", "uniform")


@dataclass
class OutputCheck:
    name: str
    shape: tuple[int, ...]
    max_abs: float                  # against onnxruntime (optimised)
    max_rel: float
    cosine: float
    sqnr_db: float
    top1: float | None              # fraction of batch items whose argmax agrees
    passed: bool
    rule: str = "tolerance"         # tolerance | float64 | noise | non-finite
    # Errors against the float64 truth, relative to the largest true magnitude (when run).
    truth_error: float | None = None
    ort_truth_error: float | None = None
    ort_plain_truth_error: float | None = None
    noise: float | None = None      # onnxruntime optimised vs unoptimised, when consulted
    note: str = ""


@dataclass
class VerifyReport:
    checks: list[OutputCheck]
    inputs: str                     # where the input data came from
    float64: str = "not needed"     # or why it was not available
    kernels: str = ""               # the session report's kernels and slow paths
    concurrent: str = ""            # with sessions > 1: the session's line on those runs

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_json(self) -> str:
        return json.dumps({"passed": self.passed, "inputs": self.inputs,
                           "float64": self.float64, "concurrent": self.concurrent,
                           "outputs": [asdict(c) for c in self.checks]}, indent=2)


# ---- inputs -------------------------------------------------------------------------------

def seeded_inputs(model: onnx.ModelProto, seed: int,
                  shapes: dict[str, tuple[int, ...]] | None = None,
                  distribution: str = "normal") -> dict[str, np.ndarray]:
    from paleozoic.accuracy.inputs import random_inputs

    return random_inputs(model, seed, shapes, distribution)


def load_input_files(specs: list[str], shapes: dict[str, tuple[int, ...]],
                     dtypes: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """User data for every session input: NAME=FILE.npy entries, or folders holding
    NAME.npy files. Each array must have the session's input shape; it is converted to
    the input's type (`dtypes`, float32 where not given); an integer input takes integer
    data only."""
    files: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep:
            files[name] = Path(path)
            continue
        folder = Path(spec)
        if not folder.is_dir():
            raise ModelLoadError(f"--input {spec}: expected NAME=FILE.npy or a folder of "
                                 f"NAME.npy files")
        for name in shapes:
            candidate = folder / f"{name}.npy"
            if candidate.is_file():
                files.setdefault(name, candidate)
    unknown = sorted(set(files) - set(shapes))
    if unknown:
        raise ModelLoadError(f"--input {unknown[0]}: the session has no input of that name "
                             f"(its inputs: {', '.join(shapes)})")
    missing = [n for n in shapes if n not in files]
    if missing:
        raise ModelLoadError(f"no data for input {missing[0]!r}; pass --input "
                             f"{missing[0]}=FILE.npy (every input needs data once one has)")
    feeds: dict[str, np.ndarray] = {}
    for name, path in files.items():
        if not path.is_file():
            raise ModelLoadError(f"--input {name}={path}: no such file")
        try:
            value = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as err:
            raise ModelLoadError(f"--input {name}={path}: not a .npy array ({err})") from None
        if not np.issubdtype(value.dtype, np.number):
            raise ModelLoadError(f"--input {name}={path}: dtype {value.dtype} is not numeric")
        if tuple(value.shape) != tuple(shapes[name]):
            raise ModelLoadError(
                f"--input {name}={path}: shape {list(value.shape)} does not match the "
                f"session's input shape {list(shapes[name])} (recompile with --input-shape "
                f"{name}={'x'.join(map(str, value.shape))} to run this data)")
        dtype = (dtypes or {}).get(name, "float32")
        if dtype != "float32" and not np.issubdtype(value.dtype, np.integer):
            raise ModelLoadError(f"--input {name}={path}: the input is {dtype} (ids, masks or "
                                 f"pixels) but the file holds {value.dtype}")
        feeds[name] = value.astype(dtype)
    return {name: feeds[name] for name in shapes}


# ---- references ---------------------------------------------------------------------------

def onnxruntime_session(model: onnx.ModelProto, threads: int = 2,
                        optimize: bool = True) -> Any:
    """A quiet CPU onnxruntime session on `threads` intra-op threads (the reference)."""
    import onnxruntime as ort  # optional dependency, needed by verify only

    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def reference_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                      threads: int = 2) -> list[np.ndarray]:
    return onnxruntime_session(model, threads).run(None, feeds)


# ---- metrics ------------------------------------------------------------------------------

def truth_error(value: np.ndarray, truth: np.ndarray) -> float:
    """max |value - truth| / max |truth|: the error as seen at the output's scale."""
    value = np.asarray(value, dtype=np.float64).reshape(truth.shape)
    if not np.all(np.isfinite(value)):
        return float("inf")
    scale = float(np.abs(truth).max(initial=0.0))
    return float(np.abs(value - truth).max(initial=0.0)) / max(scale, 1e-300)


def _top1(ours: np.ndarray, ref: np.ndarray) -> float | None:
    """Classifier-shaped outputs ([N, C] or [N, C, 1, 1], C > 1): argmax agreement."""
    shape = ours.shape
    if len(shape) < 2 or shape[1] < 2 or any(d != 1 for d in shape[2:]):
        return None
    a = ours.reshape(shape[0], shape[1]).argmax(axis=1)
    b = ref.reshape(shape[0], shape[1]).argmax(axis=1)
    return float(np.mean(a == b))


def compare(name: str, ours: np.ndarray, ref: np.ndarray) -> OutputCheck:
    ref = ref.reshape(ours.shape)
    a, b = ours.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(a - b)
    rel = diff / np.maximum(np.abs(b), 1e-12)
    finite = bool(np.all(np.isfinite(ours)))
    noise_power = float(np.sum(np.square(a - b))) if finite else float("inf")
    signal_power = float(np.sum(np.square(b)))
    if not finite:
        sqnr = float("-inf")
    elif noise_power == 0.0:
        sqnr = float("inf")
    else:
        sqnr = 10.0 * np.log10(max(signal_power, 1e-300) / noise_power)
    norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    if not finite or norms == 0.0:   # all-zero outputs agree only with each other
        cosine = 1.0 if finite and not a.any() and not b.any() else float("nan")
    else:
        cosine = float(np.dot(a.ravel(), b.ravel()) / norms)
    passed = finite and bool(np.allclose(ours, ref, rtol=RTOL, atol=ATOL))
    return OutputCheck(name, tuple(ours.shape), float(diff.max(initial=0.0)),
                       float(rel.max(initial=0.0)), cosine, float(sqnr), _top1(ours, ref),
                       passed, "tolerance" if finite else "non-finite")


def model_for(out: Path, model_path: str | Path | None) -> onnx.ModelProto:
    if model_path is None:
        manifest = json.loads((out / "session.json").read_text())
        model_path = manifest.get("source_path")
        if not model_path:
            raise ModelLoadError(f"{out}: the session was compiled from an in-memory model; "
                                 f"pass --model MODEL.onnx")
    path = Path(model_path)
    if not path.is_file():
        raise ModelLoadError(f"{path}: model not found; pass --model MODEL.onnx")
    from paleozoic.frontend.loader import load_full_model

    return load_full_model(path)


def _judge_on_truth(checks: list[OutputCheck], outputs: list[np.ndarray],
                    truths: list[np.ndarray], optimised: list[np.ndarray],
                    plain: list[np.ndarray], only_failed: bool) -> None:
    for i, check in enumerate(checks):
        truth = truths[i]
        check.truth_error = truth_error(outputs[i], truth)
        check.ort_truth_error = truth_error(optimised[i], truth)
        check.ort_plain_truth_error = truth_error(plain[i], truth)
        if check.rule == "non-finite" or (only_failed and check.passed):
            continue
        limit = truth_limit(check.ort_truth_error, check.ort_plain_truth_error)
        check.passed = check.truth_error <= limit
        check.rule = "float64"
        check.note = (f"outside rtol/atol of onnxruntime; against float64 its error is "
                      f"{check.truth_error:.2e}, onnxruntime's {check.ort_truth_error:.2e} "
                      f"(optimised) / {check.ort_plain_truth_error:.2e} (unoptimised), "
                      f"limit {limit:.2e} ({TRUTH_FACTOR:g}x the larger, at least "
                      f"{FP32_FLOOR:.2e})")


def verify_session(out: str | Path, model: onnx.ModelProto, seed: int = 0,
                   inputs: dict[str, np.ndarray] | None = None,
                   distribution: str = "normal", float64: bool = False,
                   sessions: int = 1) -> VerifyReport:
    """Runs the built session on `inputs` (or seeded ones) and judges each output as the
    module docstring says. `float64=True` measures every output against the float64
    truth even where onnxruntime agrees. `sessions` > 1 also runs that many sessions at
    once over the compiled model (`-s`): the session fails (SessionRunError) unless each
    one's outputs equal the serial run's bit for bit."""
    out = Path(out)
    manifest = json.loads((out / "session.json").read_text())
    wanted = [o["onnx_name"] for o in manifest["outputs"]]
    if wanted != [o.name for o in model.graph.output]:  # compiled with --outputs
        from paleozoic.frontend.subgraph import select_outputs

        part = onnx.ModelProto()
        part.CopyFrom(model)
        select_outputs(part, str(out), wanted)
        model = part
    # The session's input shapes, which --input-shape / --batch fixed where the model's
    # are symbolic.
    shapes = {i["onnx_name"]: tuple(i["shape"]) for i in manifest["inputs"]}
    # Inputs compiled in as constants (--input-value): onnxruntime gets the same values.
    fixed = {name: np.array(v["values"], dtype=v["dtype"]).reshape(v["shape"])
             for name, v in manifest.get("input_values", {}).items()}
    if inputs is None:
        feeds = seeded_inputs(model, seed, {**shapes, **{n: v.shape for n, v in
                                                        fixed.items()}}, distribution)
        source = f"seeded {distribution}, seed {seed}"
    else:
        feeds, source = inputs, "user data"
    feeds = {**feeds, **fixed}
    result = run_session(out, [v for n, v in feeds.items() if n not in fixed],
                         sessions=sessions)
    optimised = reference_outputs(model, feeds)
    checks = [compare(o["onnx_name"], ours, ref)
              for o, ours, ref in zip(manifest["outputs"], result.outputs, optimised)]
    at = result.report.find("kernels (SDK ops on each):")
    concurrent = [line for line in result.report.splitlines()
                  if line.startswith("concurrent sessions:")]
    report = VerifyReport(checks, source, kernels=result.report[at:] if at >= 0 else "",
                          concurrent=concurrent[0] if concurrent else "")
    mix = _reduced_precision(out)
    if mix:
        _judge_against_runtime(out, manifest, model, shapes, checks, result.outputs,
                               list(feeds.values()), mix)
        return report
    if all(c.passed for c in checks) and not float64:
        return report
    plain = onnxruntime_session(model, optimize=False).run(None, feeds)
    from paleozoic.accuracy.truth import Float64Reference, ReferenceUnavailable

    try:
        truths = Float64Reference(model).run(feeds)
    except ReferenceUnavailable as err:
        report.float64 = f"unavailable: {err}"
        logger.warning("float64 reference unavailable (%s); judging on onnxruntime's own "
                       "optimised/unoptimised difference", err)
        _judge_on_noise(checks, result.outputs, optimised, plain)
        return report
    report.float64 = "run"
    _judge_on_truth(checks, result.outputs, truths, optimised, plain, only_failed=True)
    return report


def _reduced_precision(out: Path) -> str:
    """"" for an fp32 plan, else the precisions its blocks use (e.g. "int8, fp16")."""
    from paleozoic.ir import Plan
    from paleozoic.ir.plan import Precision

    plan = Plan.load(out / "plan.json")
    used = {p for b in plan.blocks for p in (b.precision, *b.layer_precision.values())}
    return ", ".join(p.value for p in Precision if p in used) if used - {Precision.FP32} else ""


def _judge_against_runtime(out: Path, manifest: dict[str, Any], model: onnx.ModelProto,
                           shapes: dict[str, tuple[int, ...]], checks: list[OutputCheck],
                           outputs: list[np.ndarray], feeds: list[np.ndarray],
                           mix: str) -> None:
    from paleozoic.calibration.params import quantization_from_tensors
    from paleozoic.codegen.weights import read_weights
    from paleozoic.ir import Plan
    from paleozoic.pipeline import load_queue
    from paleozoic.runner.plan_runner import PlanRunner

    queue = load_queue(model, input_shapes=shapes)
    quantization = quantization_from_tensors(read_weights(out / "weights.bin"))
    from paleozoic.runner.sdk import built_sdk

    expected = PlanRunner(queue, Plan.load(out / "plan.json"), quantization,
                          sdk=built_sdk(out)).run(feeds)
    for check, info, ours in zip(checks, manifest["outputs"], outputs):
        same = np.array_equal(ours, expected[info["name"]], equal_nan=True)
        check.passed = same and check.rule != "non-finite"
        check.rule = "runtime"
        check.note = (f"{mix} session: {'identical' if same else 'NOT identical'} to the "
                      f"runtime's run of the same plan; against onnxruntime fp32 "
                      f"SQNR {check.sqnr_db:.1f} dB, cosine {check.cosine:.6f} (reported, "
                      f"not judged)")


def _judge_on_noise(checks: list[OutputCheck], outputs: list[np.ndarray],
                    optimised: list[np.ndarray], plain: list[np.ndarray]) -> None:
    for i, check in enumerate(checks):
        if check.passed or check.rule == "non-finite":
            continue
        noise = float(np.abs(optimised[i].astype(np.float64) -
                             plain[i].astype(np.float64)).max())
        check.noise = noise
        check.passed = check.max_abs <= NOISE_FACTOR * noise
        check.rule = "noise"
        check.note = (f"outside rtol/atol; no float64 truth; onnxruntime's optimised and "
                      f"unoptimised graphs differ by {noise:.3e}, limit {NOISE_FACTOR:g}x")
