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


def test_a_rerun_whose_timings_are_kept_starts_no_cluster(small_cnn_path, tmp_path,
                                                          monkeypatch) -> None:
    from paleozoic.api import tune
    import paleozoic.farm.ray_farm as ray_farm

    kept = tmp_path / "timings.jsonl"
    first = tune(small_cnn_path, cost="measured", measurements=kept)
    started: list[object] = []
    monkeypatch.setattr(ray_farm, "RayFarm", lambda **how: started.append(how))
    again = tune(small_cnn_path, cost="measured", workers=2, measurements=kept)
    assert started == []
    assert again.plan.to_dict()["blocks"] == first.plan.to_dict()["blocks"]
    assert "no board was started: every timing the search needed was kept" in again.lines
