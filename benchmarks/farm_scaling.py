"""Measured tuning on a farm of boards: how its time scales with the boards (issue 28).

Two parts, both DP over cuts and MPs 1..32 on the mock's board, guided by its device model:

1. Simulated boards (`tune --simulate-boards N`): each block is answered at once from the
   device model while a clock keeps what N boards would have taken (a session 0.5 s, a
   block 0.2 s, a batch on the board free first). A run's tuning time is that clock plus
   the search's own wall time (everything but answering the blocks). For 1, 2, 4, ... 64
   boards on ResNet-50 and DenseNet-121 from the zoo; the speedup is against one board.
2. Real boards (`--ray`): `tune --cost measured` on a local Ray cluster of 1 and of 2 boards
   (`--workers`), each run a fresh process and a fresh store, timed in turns (1 then 2 in
   even rounds, 2 then 1 in odd ones, so that a host drifting slower or faster over the
   run does not favour either), with the plans compared; and the same run again over its
   warm store. With `--running`, the same again on a cluster already up (`ray start --head`
   with 1 or 2 units of pz_board, then `tune --ray auto`): what a user who keeps a cluster
   up pays per run, without Ray's start (2-7 s here). Each run's search time (from the
   model loaded to the plan, tune's log) is given beside its wall time, and the host's
   contention beside them: a quarter of the model's batches timed on one board alone, then
   on two at once, each pinned to a core (host_contention), which bounds what two boards
   can gain on this host whatever the farm does.

    pip install '.[ray]' ./testing matplotlib
    python benchmarks/farm_scaling.py                # ~4 min on 2 cores
    python benchmarks/farm_scaling.py --models "" --ray densenet121   # the Ray part alone
    python benchmarks/farm_scaling.py --models "" --ray densenet121 --running --rounds 4

Writes benchmarks/results/farm_scaling.md and farm_scaling.png (matplotlib, if installed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx

RESULTS = Path(__file__).resolve().parent / "results"
BOARDS = (1, 2, 4, 8, 16, 32, 64)


def simulated(model: onnx.ModelProto, boards: int) -> dict[str, float]:
    """One guided DP search on `boards` simulated boards: its tuning time and its parts."""
    from paleozoic.farm.simulate import SimulatedFarm
    from paleozoic.optimize import SearchSpace, load_optimizer, run_optimizer
    from paleozoic.optimize.measured import MeasuredOracle
    from paleozoic.pipeline import load_queue

    queue = load_queue(model)
    farm = SimulatedFarm(boards)
    begin = time.perf_counter()
    oracle = MeasuredOracle(queue, guided=True, farm=farm)
    plan = run_optimizer(load_optimizer("dp"), queue, oracle, SearchSpace.from_queue(queue))
    search_s = time.perf_counter() - begin - farm.spent_s
    return {"boards": boards, "tuning_s": farm.elapsed_s + search_s,
            "measuring_s": farm.elapsed_s, "search_s": search_s,
            "blocks": oracle.measured, "sessions": oracle.sessions,
            "plan_us": float(plan.notes["cost_us"])}


def ray_runs(path: Path, workers: tuple[int, ...], rounds: int,
             running: bool = False) -> list[dict]:
    """`paleozoic tune --cost measured` of `path` on N boards, fresh store each time, in
    turns (the order reversed every other round); then once more over the last run's store
    (warm). running=False: a local cluster per run (`--workers N`); True: a cluster
    started before the timed run (`ray start --head`) and joined (`--ray auto`)."""
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for n in workers if r % 2 == 0 else workers[::-1]:
                plan = Path(tmp) / f"plan{n}.json"
                store = Path(tmp) / f"m{n}_{r}.jsonl"
                found.append(_tune(path, n, plan, store, running) | {"round": r})
        warm = _tune(path, workers[-1], Path(tmp) / "warm.json", store, running)
        found.append(warm | {"round": "warm"})
    return found


def ray_section(name: str, rounds: int, running: bool = False,
                contention: bool = True) -> list[str]:
    """The Ray part for one model (a zoo name or an .onnx file), as markdown lines; with
    `contention`, host_contention's figures for it too."""
    from paleozoic_testing.zoo import load_zoo_model

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(name)
        if path.suffix != ".onnx":
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(load_zoo_model(name), str(path))
        runs = ray_runs(path, (1, 2), rounds, running)
        shared = host_contention(onnx.load(str(path))) if contention else None
    cold = [r for r in runs if r["round"] != "warm"]
    walls = {n: [r["wall_s"] for r in cold if r["workers"] == n] for n in (1, 2)}
    searches = {n: [r["search_s"] for r in cold if r["workers"] == n] for n in (1, 2)}
    median = {n: statistics.median(w) for n, w in walls.items()}
    search = {n: statistics.median(w) for n, w in searches.items()}
    plans = {json.dumps(r["plan"], sort_keys=True) for r in runs}
    warm = next(r["wall_s"] for r in runs if r["round"] == "warm")
    # Runs in turns: each round's 2-board run against its 1-board run.
    paired = [two / one for one, two in zip(walls[1], walls[2])]
    title = ("a Ray cluster already up (`ray start --head`, then `tune --cost measured "
             "--ray auto`)" if running else
             "a local Ray cluster per run (`tune --cost measured --workers N`)")
    lines = [f"## {path.stem}: {title}", "",
             f"Whole processes, fresh stores, in turns (the order reversed every other "
             f"round); the median of {rounds} run(s) each. The search: from the model "
             f"loaded to the plan (the wait for the boards, the device model's screen, the "
             f"measuring, the DP), as tune's log gives it.", "",
             "| boards | wall (s), median | runs (s) | vs 1 board | search (s), median | "
             "vs 1 board |", "|---|---|---|---|---|---|"]
    for n in (1, 2):
        lines.append(f"| {n} | {median[n]:.1f} | {', '.join(f'{w:.1f}' for w in walls[n])} | "
                     f"{median[n] / median[1]:.2f}x | {search[n]:.1f} | "
                     f"{search[n] / search[1]:.2f}x |")
    lines += ["", f"Each round's ratio: {', '.join(f'{p:.2f}x' for p in paired)}. "
                  f"Plans: {'one plan from every run' if len(plans) == 1 else 'DIFFERENT'}. "
                  f"A re-run over a warm store: {warm:.1f} s.", ""]
    if shared:
        lines += [f"This host's two cores: a quarter of this search's batches took "
                  f"{shared['alone_s']:.2f} s on one board alone and {shared['together_s']:.2f} s "
                  f"on each of two boards at once ({shared['slowdown']:.2f}x; CPU time "
                  f"{shared['cpu_slowdown']:.2f}x), so two boards here measure "
                  f"{2 / shared['slowdown']:.2f}x as fast as one at the most.", ""]
    return lines


def _tune(path: Path, workers: int, plan: Path, store: Path, running: bool = False) -> dict:
    # Run from the run's folder, as a user runs tune from a project of theirs: from this
    # source checkout, Ray's workers would need a working folder of their own to import the
    # installed package (paleozoic.farm.ray_farm), which costs about a second a run.
    farm = ["--ray", "auto"] if running else ["--workers", str(workers)]
    command = [sys.executable, "-m", "paleozoic", "-v", "tune", str(path.resolve()), "--cost",
               "measured", *farm, "-o", str(plan), "--force", "--measurements", str(store)]
    with _cluster(workers, plan.parent) if running else contextlib.nullcontext():
        begin = time.perf_counter()
        done = subprocess.run(command, check=True, capture_output=True, text=True,
                              cwd=plan.parent)
        wall = time.perf_counter() - begin
    # The search's own wall time (run_optimizer's log line): from the model loaded to the
    # plan, the wait for the boards and the measuring included.
    search = re.search(r"under measured in ([0-9.]+) s", done.stderr)
    if search is None:
        raise RuntimeError(f"tune's log has no search time (run_optimizer's line): "
                           f"{done.stderr[-2000:]}")
    return {"workers": workers, "wall_s": wall, "search_s": float(search[1]),
            "plan": json.loads(plan.read_text())["blocks"]}


@contextlib.contextmanager
def _cluster(boards: int, cwd: Path) -> Iterator[None]:
    """A Ray head on this host with `boards` units of pz_board, stopped on the way out."""
    ray = [sys.executable, "-m", "ray.scripts.scripts"]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    subprocess.run([*ray, "start", "--head", f"--num-cpus={cores}", "--include-dashboard=false",
                    f"--resources={json.dumps({'pz_board': boards})}"],
                   check=True, capture_output=True, text=True, cwd=cwd)
    try:
        yield
    finally:
        subprocess.run([*ray, "stop"], check=False, capture_output=True, cwd=cwd)


def _board_share(path: str, core: int, start: Any, results: Any) -> None:
    """A board's work in a process of its own, pinned to one core: every batch of the file
    `path` timed as a board times it, from when every such process is ready (`start`, a
    barrier); puts (wall, CPU) seconds in `results`."""
    import pickle

    from paleozoic.runner.block_bench import Bench, time_blocks

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, [core])
    queue, batches = pickle.loads(Path(path).read_bytes())
    time_blocks(queue, batches[0], Bench())  # imports, first touches
    start.wait()
    begin, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        time_blocks(queue, batch, Bench())
    results.put((time.perf_counter() - begin, time.process_time() - cpu))


def _boards_at_once(path: Path, cores: list[int]) -> list[tuple[float, float]]:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(len(cores)), context.Queue()
    boards = [context.Process(target=_board_share, args=(str(path), core, start, results))
              for core in cores]
    for board in boards:
        board.start()
    found = [results.get() for _ in boards]
    for board in boards:
        board.join()
    return found


def host_contention(model: onnx.ModelProto, rounds: int = 2) -> dict[str, float]:
    """How much slower a board's work runs with a second board beside it on this host: the
    same batches (a quarter of what a guided search of `model` measures) timed in one
    process alone, then in two processes at once, each pinned to a core of its own, as a
    local farm's boards are. Two boards on two cores measure 2 / slowdown times as fast as
    one, whatever the farm does."""
    import pickle

    from paleozoic.farm.simulate import SimulatedFarm
    from paleozoic.optimize import SearchSpace, load_optimizer, run_optimizer
    from paleozoic.optimize.measured import MeasuredOracle
    from paleozoic.pipeline import load_queue

    queue = load_queue(model)
    kept: list = []

    # The batches a search on one board measures, answered from the device model (the
    # mock's clock) rather than timed: the same batches, without timing them twice.
    class Keeping(SimulatedFarm):
        def measure(self, queue, batches, bench):  # type: ignore[no-untyped-def]
            batches = list(batches)
            kept.extend(batches)
            return super().measure(queue, batches, bench)

    oracle = MeasuredOracle(queue, guided=True, farm=Keeping(1))
    run_optimizer(load_optimizer("dp"), queue, oracle, SearchSpace.from_queue(queue))
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0, 1]
    alone, together, cpu_alone, cpu_together = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batches.pkl"
        path.write_bytes(pickle.dumps((queue, kept[::4])))
        for _ in range(rounds):
            (wall, cpu), = _boards_at_once(path, cores[:1])
            alone.append(wall)
            cpu_alone.append(cpu)
            pair = _boards_at_once(path, cores[:2])
            together.append(statistics.mean(w for w, _ in pair))
            cpu_together.append(statistics.mean(c for _, c in pair))
    return {"alone_s": statistics.median(alone), "together_s": statistics.median(together),
            "slowdown": statistics.median(together) / statistics.median(alone),
            "cpu_slowdown": statistics.median(cpu_together) / statistics.median(cpu_alone)}


def plot(results: dict[str, list[dict]], out: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, rows in results.items():
        ax.plot([r["boards"] for r in rows], [r["tuning_s"] for r in rows], "o-", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("boards")
    ax.set_ylabel("tuning time (s, simulated boards)")
    ax.set_title("tune --cost measured, DP, guided by the device model")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="resnet50,densenet121")
    parser.add_argument("--boards", default=",".join(map(str, BOARDS)))
    parser.add_argument("--ray", default="", metavar="MODELS",
                        help="also time real Ray boards (1 and 2 local workers) on these "
                             "models, comma-separated: zoo names or .onnx files")
    parser.add_argument("--running", action="store_true",
                        help="with --ray: also time the runs on a cluster already up "
                             "(`ray start --head`, then `tune --ray auto`)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from paleozoic_testing.zoo import load_zoo_model

    lines = ["# Measured tuning on a farm of boards", "",
             "Written by `benchmarks/farm_scaling.py`. DP over cuts and MPs 1..32 on the mock's",
             "board, guided by its device model.", ""]
    results: dict[str, list[dict]] = {}
    for name in filter(None, args.models.split(",")):
        model = load_zoo_model(name)
        rows = [simulated(model, int(n)) for n in args.boards.split(",")]
        results[name] = rows
        base = rows[0]["tuning_s"]
        lines += [f"## {name}: simulated boards", "",
                  "| boards | tuning (s) | measuring (s) | search (s) | speedup | blocks | "
                  "sessions | plan (us) |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['boards']} | {r['tuning_s']:,.1f} | {r['measuring_s']:,.1f} | "
                         f"{r['search_s']:.1f} | {base / r['tuning_s']:.1f}x | {r['blocks']} | "
                         f"{r['sessions']} | {r['plan_us']:,.1f} |")
        lines.append("")
        print("\n".join(lines[-len(rows) - 4:]))
    for ray_model in filter(None, args.ray.split(",")):
        for running in (False, True) if args.running else (False,):
            lines += ray_section(ray_model, args.rounds, running, contention=not running)
            print("\n".join(lines[-14:]))
    args.out.mkdir(parents=True, exist_ok=True)
    if results and plot(results, args.out / "farm_scaling.png"):
        lines += ["![tuning time against boards](farm_scaling.png)", ""]
    (args.out / "farm_scaling.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
