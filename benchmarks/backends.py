"""onnxruntime, the mock SDK and the oneDNN SDK side by side, in one run on 2 threads.

For the nine zoo models and the six paper workloads: onnxruntime's median latency, then
the median wall time of a forward on each SDK under the per-layer and fuse-all plans (MP =
--threads) and, on oneDNN, under the plan `paleozoic tune --optimizer dp --cost measured
--sdk onednn` picks (the same oracle and search, in-process), with each one's ratio to
onnxruntime. Then the geometric means over the zoo and issue 14's goal verdicts: ResNet-50
and VGG-19 (the zoo's) on oneDNN at or below 1.0x onnxruntime, the zoo's geometric mean at
or below 1.2x, the measured-tuned plan faster than both built-in plans on at least 7 of 9.
"oneDNN" in the verdicts is the best of its three plans, what a user who tunes gets. Not a
test.

Forwards are timed in-process by `paleozoic bench`'s timing (paleozoic/bench.py:
PlanRunner, the wrapper's runtime over the SDK library the emitted sessions link);
`--emitted` instead builds and runs the emitted sessions (`paleozoic build --sdk`), several
minutes of C++ compiles per model.
In-process, the configurations take turns (--rounds, each one untimed forward and then
repeats/rounds timed ones), so drift on a shared machine falls on all of them alike;
onnxruntime's sessions are made and released in each turn, so its spinning pool threads do
not take the cores from the SDKs. libgomp spins briefly (GOMP_SPINCOUNT=1000) unless set
(paleozoic/__init__.py).

    python benchmarks/backends.py [--models squeezenet resnet50 ...] [--repeats 10]
"""

from __future__ import annotations

import argparse
import gc
import logging
import math
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from paleozoic.bench import Config, bench_model, timed_ms
from paleozoic.ir import LayerQueue, Plan
from paleozoic.optimize import SearchSpace, load_optimizer, run_optimizer
from paleozoic.optimize.measured import MeasuredOracle
from paleozoic.optimize.plans import fuse_all, per_layer
from paleozoic.pipeline import build_session, compile_model, load_queue
from paleozoic.runner.sdk import SDKS, sdk_available
from paleozoic_testing.workloads import WORKLOADS
from paleozoic_testing.workloads import build as build_workload
from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model
from paleozoic.accuracy.inputs import random_inputs
from paleozoic.accuracy.verify import onnxruntime_session

logger = logging.getLogger("backends")

ONEDNN_PLANS = ("per-layer", "fuse-all", "tuned")
GOAL_MODELS = ("vgg19", "resnet50")  # issue 14: at or below 1.0x onnxruntime
GOAL_GEOMEAN = 1.2
GOAL_TUNED_WINS = 7


def _ort_ms(model: onnx.ModelProto, feeds: dict, repeats: int, threads: int,
            spin: bool) -> list[float]:
    """onnxruntime as verify runs it; without `spin`, its pool threads sleep between
    runs instead of spinning (what a loaded machine favours). The session is released on
    return (callers collect), so its spinning threads do not take the cores from what runs
    next."""
    import onnxruntime as ort

    if spin:
        session = onnxruntime_session(model, threads)
    else:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
    return timed_ms(lambda: session.run(None, feeds), repeats)


def _tune(queue: LayerQueue, threads: int, max_block: int) -> tuple[Plan, float]:
    """DP over measured oneDNN block costs (as `tune --cost measured --sdk onednn`, which
    has max_block 8), MPs up to `threads`, then the CLI's whole-forward check against the
    built-in plans; (plan, seconds the tuning took)."""
    start = time.monotonic()
    oracle = MeasuredOracle(queue, repeats=5, sdk="onednn", max_block=max_block)
    space = SearchSpace.from_queue(queue, mps=tuple(range(1, threads + 1)))
    plan = run_optimizer(load_optimizer("dp"), queue, oracle, space)
    plan = oracle.confirm(plan, mp=threads)
    return plan, time.monotonic() - start


def _emitted_ms(model: onnx.ModelProto, plan: Plan, sdk: str, feeds: dict, repeats: int,
                out: Path) -> float:
    compile_model(model, out, plan=plan, force=True)
    build_session(out, sdk=sdk)
    inputs = []
    for i, value in enumerate(feeds.values()):
        path = out / f"input{i}.bin"
        value.astype("<f4").tofile(path)
        inputs += ["-i", str(path)]
    result = subprocess.run([str(out / "build" / "session"), "-w", str(out / "weights.bin"),
                             "-o", str(out), "-r", str(repeats + 1), *inputs],
                            capture_output=True, text=True, check=True)
    return float(re.search(r"wall time: ([0-9.]+) ms", result.stdout).group(1))


def bench(name: str, model: onnx.ModelProto, sdks: list[str], args: argparse.Namespace,
          work: Path) -> dict[str, float]:
    """Every configuration's median forward. In-process, the configurations take turns in
    `args.rounds` rounds of `repeats / rounds` forwards each, so drift on a shared machine
    (another tenant, clocks) falls on all of them alike rather than on whichever ran last."""
    feeds = random_inputs(model)
    queue = load_queue(model)
    plans = {"per-layer": per_layer(queue, mp=args.threads),
             "fuse-all": fuse_all(queue, mp=args.threads)}
    row: dict[str, float] = {}
    if "onednn" in sdks:
        plans["tuned"], row["tune s"] = _tune(queue, args.threads, args.max_block)
        row["tuned blocks"] = len(plans["tuned"].blocks)
        row["tuned mp1"] = sum(b.mp == 1 for b in plans["tuned"].blocks)
        # 1 when the whole-forward check kept a built-in plan: the same plan, not a win.
        row["tuned builtin"] = float(plans["tuned"].strategy in ("per-layer", "fuse-all") or
                                     "same_as" in plans["tuned"].notes)
    configs = [(sdk, plan_name) for sdk in sdks for plan_name in plans
               if plan_name != "tuned" or sdk == "onednn"]
    # The mock is the reference, not a contender: fewer repeats of its slow kernels.
    repeats = {c: args.repeats if c[0] != "mock" else max(1, args.repeats // 3)
               for c in configs}
    if args.emitted:
        for sdk, plan_name in configs:
            row[f"{sdk} {plan_name}"] = _emitted_ms(model, plans[plan_name], sdk, feeds,
                                                    repeats[(sdk, plan_name)],
                                                    work / f"{name}_{plan_name}")
        times = {"ort spin": _ort_ms(model, feeds, args.repeats, args.threads, True)}
        gc.collect()
        times["ort no-spin"] = _ort_ms(model, feeds, args.repeats, args.threads, False)
    else:
        # paleozoic bench's timing: configurations and onnxruntime in interleaved rounds.
        tuned = work / f"{name}_tuned.json"
        if "tuned" in plans:
            tuned.write_text(plans["tuned"].to_json())
        configs = [Config(sdk, str(tuned) if plan_name == "tuned" else plan_name)
                   for sdk, plan_name in configs]
        timed = bench_model(model, name, configs, threads=args.threads,
                            repeat=args.repeats, rounds=args.rounds)
        row.update({f"{c.sdk} {'tuned' if c.plan == str(tuned) else c.plan}": r.median_ms
                    for c, r in zip(configs, timed.results)})
        row.update({"ort spin": timed.ort_spin_ms, "ort no-spin": timed.ort_sleep_ms,
                    "onnxruntime": timed.ort_median_ms})
        return row
    row.update({label: float(np.median(t)) for label, t in times.items()})
    # The reference is onnxruntime's faster configuration in this run.
    row["onnxruntime"] = min(row["ort spin"], row["ort no-spin"])
    return row


def _geomean(values: list[float]) -> float:
    return math.exp(float(np.mean([math.log(v) for v in values]))) if values else math.nan


def report(rows: dict[str, dict[str, float]], columns: list[str], threads: int,
           zoo: list[str]) -> list[str]:
    lines = [(f"median latency in ms on {threads} threads (ratio to onnxruntime = the faster "
              f"of its spinning and sleeping thread pools)"),
             f"{'model':<22}" + f"{'ort spin':>10}{'ort sleep':>10}" +
             "".join(f"{c:>24}" for c in columns)]
    for name, row in rows.items():
        ort = row["onnxruntime"]
        cells = [f"{row[c]:>13.2f} ({row[c] / ort:5.2f}x)" if c in row else f"{'-':>24}"
                 for c in columns]
        lines.append(f"{name:<22}{row['ort spin']:>10.2f}{row['ort no-spin']:>10.2f}" +
                     "".join(cells))
    for label, names in (("geomean zoo", zoo),
                         ("geomean workloads", [n for n in rows if n not in zoo])):
        names = [n for n in names if n in rows]
        if not names:
            continue
        cells = [f"{_geomean([rows[n][c] / rows[n]['onnxruntime'] for n in names]):>23.2f}x"
                 for c in columns]
        lines.append(f"{label:<22}{'':>20}" + "".join(cells))
    tuned = [n for n in rows if "tune s" in rows[n]]
    if tuned:
        lines.append("tuning (measured DP on oneDNN): " + ", ".join(
            f"{n} {rows[n]['tune s']:.0f} s ({rows[n]['tuned blocks']:.0f} blocks, "
            f"{rows[n]['tuned mp1']:.0f} at MP 1"
            f"{', a built-in plan' if rows[n].get('tuned builtin') else ''})" for n in tuned))
    lines += verdicts(rows, zoo)
    return lines


def _best_onednn(row: dict[str, float]) -> float:
    return min(row[f"onednn {p}"] for p in ONEDNN_PLANS if f"onednn {p}" in row)


def verdicts(rows: dict[str, dict[str, float]], zoo: list[str]) -> list[str]:
    zoo_rows = {n: rows[n] for n in zoo if n in rows and "onednn fuse-all" in rows[n]}
    if not zoo_rows:
        return ["goals: not judged (the oneDNN SDK is not built or no zoo model ran)"]
    out = ["goals (issue 14; oneDNN = the best of its per-layer, fuse-all, tuned plans):"]
    for name in GOAL_MODELS:
        if name in zoo_rows:
            r = _best_onednn(zoo_rows[name]) / zoo_rows[name]["onnxruntime"]
            out.append(f"  {name} on oneDNN <= 1.0x onnxruntime: {r:.2f}x "
                       f"{'MET' if r <= 1.0 else 'NOT MET'}")
    g = _geomean([_best_onednn(r) / r["onnxruntime"] for r in zoo_rows.values()])
    out.append(f"  zoo geomean <= {GOAL_GEOMEAN}x over {len(zoo_rows)} models: {g:.2f}x "
               f"{'MET' if g <= GOAL_GEOMEAN else 'NOT MET'}")
    g_fa = _geomean([r["onednn fuse-all"] / r["onnxruntime"] for r in zoo_rows.values()])
    out.append(f"  (zoo geomean of fuse-all alone: {g_fa:.2f}x)")
    if all("onednn tuned" in r for r in zoo_rows.values()):
        wins = [n for n, r in zoo_rows.items() if not r.get("tuned builtin") and
                r["onednn tuned"] < min(r["onednn per-layer"], r["onednn fuse-all"])]
        same = [n for n in zoo_rows if zoo_rows[n].get("tuned builtin")]
        if same:
            out.append(f"  (the tuned plan is a built-in one, so no win, on {len(same)}: "
                       f"{', '.join(same)})")
        out.append(f"  tuned faster than per-layer and fuse-all on >= {GOAL_TUNED_WINS} of "
                   f"{len(zoo_rows)}: {len(wins)} ({', '.join(wins) or 'none'}) "
                   f"{'MET' if len(wins) >= GOAL_TUNED_WINS else 'NOT MET'}")
    return out


def main() -> None:
    everything = [*ZOO_MODELS, *(f"workload:{w}" for w in WORKLOADS)]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=everything, choices=everything,
                        help="zoo models and paper workloads (workload:NAME)")
    parser.add_argument("--repeats", type=int, default=20,
                        help="forwards per configuration (the mock's: a third)")
    parser.add_argument("--rounds", type=int, default=4,
                        help="turns the configurations take, each of repeats/rounds forwards")
    parser.add_argument("--threads", type=int, default=2,
                        help="onnxruntime's intra-op threads and the plans' MP")
    parser.add_argument("--max-block", type=int, default=6,
                        help="the measured oracle's longest timed block besides the built-in "
                             "plans' (the CLI uses 8; fewer sessions here, as 15 models tune)")
    parser.add_argument("--emitted", action="store_true",
                        help="time the emitted session binaries instead of in-process runs")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("paleozoic").setLevel(logging.WARNING)  # the compiler's pass notes
    sdks = [sdk for sdk in SDKS if sdk_available(sdk)]
    if "onednn" not in sdks:
        logger.info("the oneDNN SDK is not built (pip install 'paleozoic[onednn]'); "
                    "only the mock is timed")
    columns = [f"{sdk} {plan}" for sdk in sdks
               for plan in (ONEDNN_PLANS if sdk == "onednn" else ONEDNN_PLANS[:2])]
    logger.info("load average at start: %s; OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s",
                " ".join(f"{x:.2f}" for x in os.getloadavg()),
                os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"))
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pz-backends-") as tmp:
        for name in args.models:
            if name.startswith("workload:"):
                model = build_workload(name.split(":", 1)[1])
            else:
                model = load_zoo_model(name)
            rows[name] = bench(name.replace(":", "_"), model, sdks, args, Path(tmp))
            logger.info("%s done (load %.2f): %s", name, os.getloadavg()[0],
                        ", ".join(f"{k} {v:.2f}" for k, v in rows[name].items()))
    logger.info("load average at end: %s", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    zoo = [n for n in args.models if n in ZOO_MODELS]
    print("\n".join(report(rows, columns, args.threads, zoo)))


if __name__ == "__main__":
    main()
