"""`tune --ray ADDRESS` joining a cluster started apart from it (`ray start --head`, as on a
farm's head host), with Ray's token authentication on: the boards it offers measure the
plan one board measures alone. (A cluster of its own, in processes of its own: the tests
that start one in-process hold it for their module.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("paleozoic.optimize.device_cost")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def cluster():
    """A head of 2 boards under a token of its own; yields (address, environment)."""
    ray_cli = shutil.which("ray") or pytest.skip("the ray command is not installed")
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=uuid.uuid4().hex)
    # Short: Ray's sockets live under it, and a socket's path has 107 bytes at most. Every
    # process of this cluster names it, which is how they are all found at the end.
    temp = tempfile.mkdtemp(prefix="pz-ray-")
    port = _free_port()
    log = Path(temp) / "head.log"  # a file, not a pipe, which a blocked head could fill
    with open(log, "w") as out:
        head = subprocess.Popen(
            [ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
             '--resources={"pz_board": 2}', "--include-dashboard=false",
             "--disable-usage-stats", f"--temp-dir={temp}"],
            env=env, cwd=temp, stdout=out, stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # until the head's raylet has registered its boards
            status = subprocess.run([ray_cli, "status", f"--address={address}"], env=env,
                                    capture_output=True, text=True)
            if "pz_board" in status.stdout:
                break
            assert head.poll() is None, f"ray start --head exited: {log.read_text()}"
            assert time.monotonic() < deadline, status.stdout + status.stderr
            time.sleep(1)
        yield address, env
    finally:
        # Killed, not stopped: a head stopped with SIGTERM drains for up to 30 s, and
        # `ray stop` would stop every cluster of this machine.
        head.kill()
        head.wait()
        _kill_naming(temp)
        shutil.rmtree(temp, ignore_errors=True)


def _kill_naming(text: str) -> None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in command:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def test_tune_joins_a_running_cluster_and_gives_the_plan_of_one_board(
        cluster, small_cnn_path: Path, tmp_path: Path) -> None:
    address, env = cluster

    def tune(plan: Path, *farm: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "paleozoic", "tune", str(small_cnn_path), "--cost",
             "measured", *farm, "-o", str(plan), "--measurements", str(plan) + ".jsonl"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)

    joined = tune(tmp_path / "joined.json", "--ray", address)
    assert joined.returncode == 0, joined.stderr
    assert "measured on a Ray farm of 2 board(s)" in joined.stdout
    alone = tune(tmp_path / "alone.json")
    assert alone.returncode == 0, alone.stderr
    blocks = [json.loads((tmp_path / f"{name}.json").read_text())["blocks"]
              for name in ("joined", "alone")]
    assert blocks[0] == blocks[1]
