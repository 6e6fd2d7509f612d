"""Measurement on a local Ray cluster of two boards: the same timings and plan as on one
board, a board killed mid-run whose blocks are measured again elsewhere, an interrupt
that stops the work in flight, and a cluster that refuses the join."""

from __future__ import annotations

import logging
import os
import signal

import numpy as np
import onnx
import pytest

from paleozoic.errors import OptimizerError
from paleozoic.frontend import import_onnx
from paleozoic.ir import LayerQueue
from paleozoic.passes import run_passes

ray = pytest.importorskip("ray")
pytest.importorskip("paleozoic.optimize.device_cost")

from paleozoic.farm.ray_farm import RESOURCE, RayFarm, _local_cluster  # noqa: E402
from paleozoic.farm.service import LocalBoard  # noqa: E402
from paleozoic.optimize import SearchSpace  # noqa: E402
from paleozoic.runner.block_bench import Bench  # noqa: E402


@pytest.fixture(scope="module")
def farm():
    made = RayFarm(workers=2)
    yield made
    made.close()


@pytest.fixture
def queue(small_cnn: onnx.ModelProto) -> LayerQueue:
    return run_passes(import_onnx(small_cnn))


def _batches(queue: LayerQueue, count: int) -> list[list[tuple[int, int, int]]]:
    space = SearchSpace.from_queue(queue)
    spans = [(i, j, mp) for mp in (1, 4, 32) for i in range(space.n)
             for j in range(i + 1, min(space.n, i + 4) + 1) if space.allows(i, j)]
    return [spans[k::count] for k in range(count)]


def _timings(results) -> dict:
    return {span: t.micros for batch, timings in results for span, t in zip(batch, timings)}


def test_two_boards_give_one_boards_timings_and_plan(farm, queue, tmp_path) -> None:
    from paleozoic.optimize.base import CostLookup
    from paleozoic.optimize.dp import solve
    from paleozoic.optimize.measured import MeasuredOracle

    assert farm.boards() == 2
    batches = _batches(queue, 6)
    assert _timings(farm.measure(queue, batches, Bench())) == \
        _timings(LocalBoard().measure(queue, batches, Bench()))
    mps = (1, 2, 4, 8, 16, 32)
    space = SearchSpace.from_queue(queue, mps=mps)
    on_farm = MeasuredOracle(queue, guided=True, farm=farm)
    alone = MeasuredOracle(queue, guided=True)
    assert np.array_equal(on_farm.cost_table(mps), alone.cost_table(mps))
    assert solve(CostLookup(space, on_farm), space) == solve(CostLookup(space, alone), space)


@pytest.mark.parametrize("boards", [1, 2, 5])
def test_calls_hold_consecutive_batches_and_shrink_towards_the_end(boards) -> None:
    from paleozoic.farm.ray_farm import CALLS_PER_BOARD, _calls_of

    # 1,000 sessions, the longest blocks first, as MeasuredOracle sends them.
    rng = np.random.default_rng(boards)
    sizes = sorted(rng.integers(1, 40, size=1000), reverse=True)
    batches = [[(0, int(size), 1)] for size in sizes]
    calls = _calls_of(batches, boards)
    assert [b for call in calls for b in call] == list(range(len(batches)))
    layers = [sum(sizes[b] for b in call) for call in calls]
    share = sum(sizes) / (CALLS_PER_BOARD * boards)
    assert all(size <= share or len(call) == 1 for size, call in zip(layers, calls))
    assert len(calls) < len(batches) / 3
    # Towards the end a call holds at most a quarter of a board's share of what is left.
    assert all(size <= sum(layers[c:]) / (4 * boards) or len(call) == 1
               for c, (size, call) in enumerate(zip(layers, calls)))
    assert len(calls[-1]) == 1
    # A few batches: one a call, so that every board gets work.
    assert _calls_of(batches[:8], boards) == [[b] for b in range(8)]


@pytest.mark.parametrize("boards", [1, 3])
def test_a_local_cluster_starts_a_worker_per_board_not_per_core(boards) -> None:
    # Ray starts a worker per CPU it is given before any work: given the host's cores, a
    # many-core host started workers no board would use.
    options = _local_cluster(boards)
    assert options["num_cpus"] == boards
    assert options["resources"] == {RESOURCE: boards}


def test_batches_sent_a_few_to_a_call_give_the_same_timings(farm, queue, monkeypatch) -> None:
    import paleozoic.farm.ray_farm as ray_farm

    monkeypatch.setattr(ray_farm, "CALLS_PER_BOARD", 2)  # calls of several small batches
    batches = _batches(queue, 48)
    assert max(map(len, ray_farm._calls_of(batches, 2))) >= 4
    got = list(farm.measure(queue, batches, Bench()))
    assert len(got) == len(batches)
    assert _timings(got) == _timings(LocalBoard().measure(queue, batches, Bench()))


def test_an_interrupt_stops_the_boards_at_work_and_the_farm_carries_on(farm, queue) -> None:
    results = farm.measure(queue, _batches(queue, 8), Bench())
    next(results)
    with pytest.raises(KeyboardInterrupt):
        results.throw(KeyboardInterrupt)
    assert farm.boards() < 2     # the boards in flight were stopped
    again = _timings(farm.measure(queue, _batches(queue, 4), Bench()))
    assert farm.boards() == 2    # and started again for the next call
    assert again == _timings(LocalBoard().measure(queue, _batches(queue, 4), Bench()))


def test_a_board_killed_mid_run_loses_nothing(farm, queue, caplog) -> None:
    """The board about to get the next batch dies (SIGKILL) after the first batch came back:
    that batch is lost with it, measured again on the other board, and said in the log."""
    batches = _batches(queue, 8)
    expected = _timings(LocalBoard().measure(queue, batches, Bench()))
    results = farm.measure(queue, batches, Bench())
    got = [next(results)]
    os.kill(ray.get(farm.idle[0].pid.remote()), signal.SIGKILL)
    with caplog.at_level(logging.WARNING, logger="paleozoic.farm.ray_farm"):
        got.extend(results)
    assert _timings(got) == expected and len(got) == len(batches)
    assert farm.lost == 1 and "measured again on another board" in caplog.text
    assert farm.summary()[0].endswith("measured again on the others")


def test_bench_fans_its_models_out_to_the_boards(farm, small_cnn_path, tmp_path) -> None:
    """`paleozoic bench --ray`: each model's configurations beside onnxruntime on one
    board; the report holds the models in the order given."""
    import shutil

    from paleozoic.bench import Config, bench

    other = tmp_path / "other.onnx"
    shutil.copy(small_cnn_path, other)
    configs = [Config("mock", "fuse-all", "fp32")]
    report = bench([small_cnn_path, other], configs, repeat=2, rounds=1, min_turn_ms=0.0,
                   farm=farm)
    assert [m.model for m in report.models] == [str(small_cnn_path), str(other)]
    for model in report.models:
        (result,) = model.results
        assert result.median_ms > 0 and result.sqnr_db > 60



@pytest.mark.parametrize("mode", [None, "token"])
def test_a_cluster_that_refuses_the_join_is_named_with_what_to_do(monkeypatch, tmp_path,
                                                                    mode) -> None:
    # What Ray raises, after 20 s of retries, joining by address a cluster that `ray start`
    # protects with a token this process did not send (checked by hand with Ray 2.60).
    import paleozoic.farm.ray_farm as ray_farm

    def refused(**options) -> None:
        raise ConnectionError(f"Failed to connect to Ray cluster at {options['address']}")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ray_farm.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_farm, "_init", refused)
    if mode is None:
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    else:
        monkeypatch.setenv("RAY_AUTH_MODE", mode)
    with pytest.raises(OptimizerError) as caught:
        RayFarm(address="10.0.0.7:6379")
    message = str(caught.value)
    assert "could not join the Ray cluster at 10.0.0.7:6379" in message
    if mode is None:
        assert "RAY_AUTH_MODE=token" in message and "--ray auto" in message
    else:
        assert "RAY_AUTH_TOKEN" in message and "RAY_AUTH_MODE=token" not in message
