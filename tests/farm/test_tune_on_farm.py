"""`tune --workers N` through the API: a local cluster started in the background while the
model loads gives one board's plan, says how many boards measured, and is stopped after.
(A module of its own: a process holds one cluster, and test_ray_farm's is up for its
whole module.)"""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("paleozoic.optimize.device_cost")


def test_tune_on_a_local_cluster_gives_the_plan_of_one_board(small_cnn_path, tmp_path) -> None:
    from paleozoic.api import tune

    alone = tune(small_cnn_path, cost="measured")
    on_farm = tune(small_cnn_path, cost="measured", workers=2,
                   measurements=tmp_path / "timings.jsonl")
    assert on_farm.plan.to_dict()["blocks"] == alone.plan.to_dict()["blocks"]
    assert "measured on a Ray farm of 2 board(s)" in on_farm.lines
    assert not ray.is_initialized()     # the cluster it started is stopped
