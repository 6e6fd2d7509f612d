"""`paleozoic bench`: a model's sessions per SDK, plan and precision beside onnxruntime, in
one run: median and p90 latency, the ratio to onnxruntime, the memory each configuration
holds, and its accuracy against onnxruntime (max error, SQNR, top-1 agreement). The report
a user reads before choosing a backend and a plan (seed 004's Kenning flow: latency and
quality per target in one table).

Forwards run in-process through the runtime module (PlanRunner: the wrapper's runtime over
the SDK library the emitted sessions link). The configurations take turns in rounds, each
one an untimed forward and then repeat/rounds timed ones (more while the turn is shorter
than `min_turn_ms`, so a 1-ms network is not judged on 5 ms of a noisy machine), so drift
on a shared machine falls on all of them alike; onnxruntime runs with the same thread
count, its session made and released in each turn so its spinning pool threads do not
take the cores from the SDKs, and counts as the faster of its spinning and sleeping thread
pools. Beside int8 configurations, onnxruntime's own static int8 of the model (QDQ,
per-channel, calibrated on the files the calibration record names) is timed and checked the
same way: the peer an int8 session has to beat.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np
import onnx

from paleozoic.errors import PaleozoicError
from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision

if TYPE_CHECKING:
    from paleozoic.farm.ray_farm import RayFarm

logger = logging.getLogger(__name__)

BUILTIN = ("per-layer", "fuse-all")


@dataclass(frozen=True)
class Config:
    """One way to run a model: an SDK, a plan (built-in name or plan.json) and a precision."""

    sdk: str
    plan: str
    precision: str = "fp32"

    @property
    def label(self) -> str:
        plan = Path(self.plan).stem if self.plan not in BUILTIN else self.plan
        return f"{self.sdk} {plan}" + ("" if self.precision == "fp32" else f" {self.precision}")


@dataclass
class Result:
    """A configuration's figures on one model (times in ms, memory in MB)."""

    model: str
    config: str
    median_ms: float
    p90_ms: float
    ratio: float                    # median / onnxruntime's median
    memory_mb: float                # resident memory the configuration added when built and run
    max_abs: float                  # worst output, against onnxruntime on the same input
    sqnr_db: float
    top1: float | None
    blocks: int = 0
    sdk: str = ""
    precision: str = "fp32"


@dataclass
class ModelReport:
    model: str
    ort_median_ms: float            # the faster of its two thread-pool modes
    ort_p90_ms: float
    ort_memory_mb: float
    results: list[Result] = field(default_factory=list)
    ort_spin_ms: float = math.nan   # each mode's median
    ort_sleep_ms: float = math.nan
    frames: int = 1                 # a forward's batch: frames/s = frames / median latency


@dataclass
class BenchReport:
    threads: int
    repeat: int
    rounds: int
    models: list[ModelReport] = field(default_factory=list)
    min_turn_ms: float = 0.0

    def geomeans(self) -> dict[str, float]:
        """Per configuration, the geometric mean of its ratios over the models that ran it."""
        ratios: dict[str, list[float]] = {}
        for m in self.models:
            for r in m.results:
                ratios.setdefault(r.config, []).append(r.ratio)
        return {c: geomean(v) for c, v in ratios.items()}

    def best(self, sdk: str) -> dict[str, Result]:
        """Per model, the fastest fp32 configuration on `sdk` (its best plan)."""
        out = {}
        for m in self.models:
            mine = [r for r in m.results if r.sdk == sdk and r.precision == "fp32"]
            if mine:
                out[m.model] = min(mine, key=lambda r: r.median_ms)
        return out

    def to_json(self) -> str:
        return json.dumps(asdict(self) | {"geomeans": self.geomeans()}, indent=2) + "\n"

    def table(self) -> str:
        at_least = (f"at least {self.repeat} forwards and {self.rounds * self.min_turn_ms:.0f} ms"
                    if self.min_turn_ms > 0 else f"{self.repeat} forwards")
        lines = [f"latency on {self.threads} thread(s): median of {at_least} in "
                 f"{self.rounds} interleaved round(s); ratio to onnxruntime; memory = resident "
                 f"growth of building and running; accuracy against onnxruntime"]
        header = (f"{'model':<28}{'configuration':<28}{'median ms':>10}{'p90 ms':>9}"
                  f"{'frames/s':>10}{'ratio':>8}{'MB':>8}{'max abs err':>13}{'SQNR dB':>9}"
                  f"{'top-1':>7}")
        lines.append(header)
        for m in self.models:
            lines.append(f"{_short(m.model):<28}{'onnxruntime':<28}{m.ort_median_ms:>10.2f}"
                         f"{m.ort_p90_ms:>9.2f}{_per_second(m.frames, m.ort_median_ms):>10}"
                         f"{1.0:>7.2f}x{m.ort_memory_mb:>8.0f}")
            for r in m.results:
                top1 = "" if r.top1 is None else f"{r.top1:.0%}"
                lines.append(f"{'':<28}{r.config:<28}{r.median_ms:>10.2f}{r.p90_ms:>9.2f}"
                             f"{_per_second(m.frames, r.median_ms):>10}"
                             f"{r.ratio:>7.2f}x{r.memory_mb:>8.0f}{r.max_abs:>13.2e}"
                             f"{r.sqnr_db:>9.1f}{top1:>7}")
        if len(self.models) > 1:
            lines.append("geometric mean of ratios: " + ", ".join(
                f"{c} {g:.2f}x" for c, g in self.geomeans().items()))
            for sdk in sorted({r.config.split()[0] for m in self.models for r in m.results}):
                best = self.best(sdk)
                if len(best) > 1:
                    g = geomean([r.ratio for r in best.values()])
                    worst = max(best.values(), key=lambda r: r.ratio)
                    lines.append(f"{sdk}, best fp32 plan per model: geometric mean {g:.2f}x, "
                                 f"slowest {_short(worst.model)} {worst.ratio:.2f}x")
        return "\n".join(lines)

    def plot(self, path: str | Path) -> None:
        """A bar chart of the latency ratios (matplotlib, the `eval` extra)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as err:
            raise PaleozoicError("a plot needs matplotlib: pip install 'paleozoic[eval]'") from err
        configs = list(dict.fromkeys(r.config for m in self.models for r in m.results))
        width = 0.8 / max(1, len(configs))
        fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(self.models) * len(configs) ** 0.5),
                                        4.0))
        for i, config in enumerate(configs):
            xs, ys = [], []
            for j, m in enumerate(self.models):
                hit = [r.ratio for r in m.results if r.config == config]
                if hit:
                    xs.append(j + i * width)
                    ys.append(hit[0])
            ax.bar(xs, ys, width, label=config)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([j + width * (len(configs) - 1) / 2 for j in range(len(self.models))])
        ax.set_xticklabels([_short(m.model) for m in self.models], rotation=30, ha="right")
        ax.set_ylabel("latency / onnxruntime")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def geomean(values: Iterable[float]) -> float:
    return math.exp(float(np.mean(np.log(list(values)))))


def _short(name: str) -> str:
    return name if len(name) <= 27 else name[:24] + "..."


def _rss_mb() -> float:
    """This process's resident memory (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _per_second(frames: int, ms: float) -> str:
    """Throughput of a forward of `frames` frames taking `ms`, as the table prints it."""
    return f"{frames * 1e3 / ms:,.1f}" if ms > 0 and math.isfinite(ms) else ""


def timed_ms(run: Callable[[], Any], repeats: int, min_ms: float = 0.0) -> list[float]:
    """Milliseconds of at least `repeats` calls of `run`, after one untimed call, and of
    as many more as it takes for the timed calls to add up to `min_ms`."""
    run()  # untimed: first touches, lazy set-up, caches after another configuration
    times: list[float] = []
    while len(times) < repeats or sum(times) < min_ms:
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _ort_session(model: onnx.ModelProto, threads: int, spin: bool) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _ort_times(model: onnx.ModelProto, feeds: dict[str, np.ndarray], threads: int, spin: bool,
               repeats: int, min_ms: float) -> list[float]:
    """onnxruntime's forwards in a session made for them and released on return."""
    session = _ort_session(model, threads, spin)
    return timed_ms(lambda: session.run(None, feeds), repeats, min_ms)


ORT_INT8 = "onnxruntime int8 (QDQ)"


def _ort_int8_model(model: onnx.ModelProto, queue: LayerQueue,
                    calibration: str | Path) -> onnx.ModelProto:
    """onnxruntime's own static int8 of `model` (quantize_static: QDQ, uint8 activations,
    per-channel int8 weights, its default MinMax calibration) from the same data files the
    calibration record was made from: the peer an int8 session is measured against."""
    import tempfile

    from onnxruntime.quantization import (
        CalibrationDataReader, QuantFormat, QuantType, quantize_static,
    )

    from paleozoic.calibration.data import iter_batches

    record = json.loads(Path(calibration).read_text())
    files = [Path(entry["file"]) for entry in record.get("data", [])]
    if not files:
        raise PaleozoicError(f"{calibration}: names no calibration data files, which "
                             f"onnxruntime's static quantisation needs; re-run `paleozoic "
                             f"calibrate`")
    batches = [dict(zip(queue.onnx_input_names, feeds))
               for _, feeds in iter_batches(files, queue)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.rest = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.rest, None)

    with tempfile.TemporaryDirectory(prefix="pz-ort-int8-") as tmp:
        fp32, ready, int8 = (Path(tmp) / f"{n}.onnx" for n in ("fp32", "ready", "int8"))
        onnx.save(model, str(fp32))
        # onnxruntime's recommended pre-processing (shape inference, graph optimisation),
        # as its users quantise; the plain model where a model does not take it.
        try:
            from onnxruntime.quantization.shape_inference import quant_pre_process

            quant_pre_process(str(fp32), str(ready))
        except Exception as err:  # noqa: BLE001 - any failure: quantise the model as it is
            logger.info("onnxruntime's quantisation pre-processing failed (%s)", err)
            ready = fp32
        # uint8 activations with int8 weights: onnxruntime's fast x86 path (its int8
        # activations default ran ResNet-50 in 30 ms here, uint8 in 13).
        quantize_static(str(ready), str(int8), Reader(), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        return onnx.load(str(int8))


def resolve_configs(sdks: Sequence[str], plans: Sequence[str], precisions: Sequence[str]
                    ) -> list[Config]:
    from paleozoic.runner.sdk import check_sdk

    for precision in precisions:
        Precision.parse(precision, "--precision")
    return [Config(check_sdk(sdk), plan, precision)
            for sdk in sdks for plan in plans for precision in precisions]


def _plan_for(queue: LayerQueue, config: Config, threads: int) -> Plan:
    from paleozoic.optimize.plans import fuse_all, per_layer
    from paleozoic.pipeline import resolve_plan, with_precision

    if config.plan == "per-layer":
        plan = per_layer(queue, mp=threads)
    elif config.plan == "fuse-all":
        plan = fuse_all(queue, mp=threads)
    else:
        plan = resolve_plan(queue, config.plan)
    return with_precision(plan, Precision(config.precision))


def bench_model(model: onnx.ModelProto, name: str, configs: Sequence[Config], *,
                threads: int = 2, repeat: int = 20, rounds: int = 4, min_turn_ms: float = 50.0,
                seed: int = 0, calibration: str | Path | None = None, batch: int | None = None,
                input_shapes: dict[str, tuple[int, ...]] | None = None,
                input_values: dict[str, np.ndarray] | None = None,
                outputs: Sequence[str] | None = None,
                progress: Callable[[str], None] | None = None) -> ModelReport:
    """Times and checks every configuration of one model (see the module's docstring).
    `input_values` are inputs compiled as constants (--input-value); onnxruntime is fed
    the same values. `outputs` (--outputs) compiles and times the part of the model that
    computes those tensors, and onnxruntime runs the same part."""
    from paleozoic.ir.plan import batch_of
    from paleozoic.pipeline import load_queue, quantization_for
    from paleozoic.runner.plan_runner import PlanRunner
    from paleozoic.accuracy.verify import compare, seeded_inputs

    if outputs:
        from paleozoic.frontend.subgraph import select_outputs

        part = onnx.ModelProto()
        part.CopyFrom(model)
        select_outputs(part, name, outputs)
        model = part
    queue = load_queue(model, input_shapes, batch, input_values)
    shapes = {t.name: tuple(t.shape) for t in queue.inputs}
    feeds = seeded_inputs(model, seed, {n: shapes[q] for n, q in
                                        zip(queue.onnx_input_names, shapes)})
    feeds.update(queue.input_values)
    for value in model.graph.input:  # a 0-d input is a [1] tensor of the session's
        declared = value.type.tensor_type
        if value.name in feeds and declared.HasField("shape") and not declared.shape.dim:
            feeds[value.name] = feeds[value.name].reshape(())
    ordered = [feeds[n].reshape(shapes[q]) for n, q in zip(queue.onnx_input_names, shapes)]
    before = _rss_mb()
    session = _ort_session(model, threads, True)
    refs = session.run(None, feeds)
    ort_memory = _rss_mb() - before
    del session
    gc.collect()
    runners: dict[Config, PlanRunner] = {}
    results: dict[Config | str, Result] = {}
    # Beside int8 configurations, onnxruntime's own static int8 of the same model and data.
    ort_int8 = None
    if calibration is not None and any(c.precision == "int8" for c in configs):
        if progress:
            progress(f"{name}: onnxruntime's static int8")
        ort_int8 = _ort_int8_model(model, queue, calibration)
        before = _rss_mb()
        outs = _ort_session(ort_int8, threads, True).run(None, feeds)
        memory = _rss_mb() - before
        checks = [compare(n, np.asarray(o), np.asarray(r))
                  for n, o, r in zip(queue.outputs, outs, refs)]
        top1 = [c.top1 for c in checks if c.top1 is not None]
        results[ORT_INT8] = Result(
            name, ORT_INT8, math.nan, math.nan, math.nan, memory,
            max(c.max_abs for c in checks), min(c.sqnr_db for c in checks),
            min(top1) if top1 else None, 0, "onnxruntime", "int8")
    for config in configs:
        if progress:
            progress(f"{name}: building {config.label}")
        plan = _plan_for(queue, config, threads)
        before = _rss_mb()
        runner = PlanRunner(queue, plan, quantization_for(queue, plan, calibration),
                            sdk=config.sdk)
        outs = runner.run(ordered)
        memory = _rss_mb() - before
        checks = [compare(n, outs[n], np.asarray(r)) for n, r in zip(queue.outputs, refs)]
        top1 = [c.top1 for c in checks if c.top1 is not None]
        runners[config] = runner
        results[config] = Result(
            name, config.label, math.nan, math.nan, math.nan, memory,
            max(c.max_abs for c in checks), min(c.sqnr_db for c in checks),
            min(top1) if top1 else None, len(plan.blocks), config.sdk, config.precision)
    rounds = max(1, min(rounds, repeat))
    per_round = max(1, repeat // rounds)
    times: dict[Any, list[float]] = {"spin": [], "sleep": [], "int8 spin": [],
                                     "int8 sleep": [], **{c: [] for c in configs}}
    for r in range(rounds):
        if progress:
            progress(f"{name}: round {r + 1} of {rounds}")
        for spin, key in ((True, "spin"), (False, "sleep")):
            times[key] += _ort_times(model, feeds, threads, spin, per_round, min_turn_ms)
            gc.collect()  # the session's pool threads go before the next configuration runs
            if ort_int8 is not None:
                times[f"int8 {key}"] += _ort_times(ort_int8, feeds, threads, spin, per_round,
                                                   min_turn_ms)
                gc.collect()
        for config, runner in runners.items():
            times[config] += timed_ms(runner.session.run, per_round, min_turn_ms)
    ort_key = min(("spin", "sleep"), key=lambda k: float(np.median(times[k])))
    ort_median = float(np.median(times[ort_key]))
    report = ModelReport(name, ort_median, float(np.percentile(times[ort_key], 90)),
                         ort_memory, ort_spin_ms=float(np.median(times["spin"])),
                         ort_sleep_ms=float(np.median(times["sleep"])), frames=batch_of(queue))
    if ort_int8 is not None:  # also the faster of its two pool modes
        int8_key = min(("int8 spin", "int8 sleep"), key=lambda k: float(np.median(times[k])))
        times[ORT_INT8] = times[int8_key]
    for config in ([ORT_INT8] if ort_int8 is not None else []) + list(configs):
        t = times[config]
        result = results[config]
        result.median_ms = float(np.median(t))
        result.p90_ms = float(np.percentile(t, 90))
        result.ratio = result.median_ms / ort_median
        report.results.append(result)
    del runners
    gc.collect()
    return report


def _bench_serialized(model: bytes, name: str, configs: Sequence[Config],
                      options: dict[str, Any]) -> ModelReport:
    """bench_model of a serialized model (what a board of a farm is handed)."""
    return bench_model(onnx.load_from_string(model), name, configs, **options)


def bench(models: Iterable[str | Path], configs: Sequence[Config], *, threads: int = 2,
          repeat: int = 20, rounds: int = 4, min_turn_ms: float = 50.0, seed: int = 0,
          calibration: str | Path | None = None, batch: int | None = None,
          input_shapes: dict[str, tuple[int, ...]] | None = None,
          input_values: dict[str, np.ndarray] | None = None,
          outputs: Sequence[str] | None = None,
          show_progress: bool = False, farm: RayFarm | None = None) -> BenchReport:
    """Every model under every configuration; models one after another, or each on a board
    of `farm` (its configurations and onnxruntime side by side on that board)."""
    from paleozoic.frontend.loader import load_full_model

    models = list(models)
    report = BenchReport(threads, repeat, rounds, min_turn_ms=min_turn_ms)
    if farm is not None:
        options = dict(threads=threads, repeat=repeat, rounds=rounds, min_turn_ms=min_turn_ms,
                       seed=seed, calibration=calibration, batch=batch,
                       input_shapes=input_shapes, input_values=input_values, outputs=outputs)
        data = [(load_full_model(Path(path)).SerializeToString(), str(path)) for path in models]
        calls = [(lambda board, model=model, name=name: board.call.remote(
            _bench_serialized, model, name, list(configs), options), 1) for model, name in data]
        done = dict(farm.run_each(calls, what="model"))
        report.models.extend(done[m] for m in range(len(data)))
        return report
    bar = None
    if show_progress:
        from tqdm import tqdm

        bar = tqdm(total=len(models), unit="model", leave=False)
    try:
        for path in models:
            model = load_full_model(Path(path))
            report.models.append(bench_model(
                model, str(path), configs, threads=threads, repeat=repeat, rounds=rounds,
                min_turn_ms=min_turn_ms, seed=seed, calibration=calibration, batch=batch,
                input_shapes=input_shapes, input_values=input_values, outputs=outputs,
                progress=(lambda text: bar.set_description_str(text)) if bar else None))
            if bar:
                bar.update()
    finally:
        if bar:
            bar.close()
    return report
