"""Boards on a Ray cluster (`pip install 'paleozoic[ray]'`).

A board is a Ray actor holding one unit of the custom resource `pz_board`: an actor runs
one method at a time, so no two measurements ever share a board. `RayFarm(workers=N)`
starts a local cluster with N boards on this host (the mock's simulated device clock does
not mind neighbours; each board is pinned to cores of its own, the host's cores / N);
`RayFarm(address=...)` joins a running cluster and uses every `pz_board` its nodes
offer, starting a board for each unit as nodes register (a process that has called ray.init
itself lends its cluster the same way, and keeps it). To add a real board, start a Ray
worker on the host that drives it with one unit of the resource:

    ray start --address HEAD:6379 --resources '{"pz_board": 1}'

On a wall-clock SDK a host must offer one unit only: two measurements on one host would
share its cores and memory bandwidth, and each would time the other.

Faults: a board whose process or node dies while measuring loses its call (a few batches,
see _calls_of); they are measured again on another board (a board is started in its place
where the resource is free again), and the log says what was lost and retried.
Interrupted (Ctrl-C), the farm kills its boards; every timing already returned is in the
caller's store.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, RayActorError, WorkerCrashedError

from paleozoic.errors import OptimizerError
from paleozoic.ir import LayerQueue
from paleozoic.farm.service import check_workers
from paleozoic.runner.block_bench import Batch, Bench, Timing, time_blocks

logger = logging.getLogger(__name__)

RESOURCE = "pz_board"
AUTH_MODE = "RAY_AUTH_MODE"  # Ray's switch for token authentication (its docs: token-auth)
_LOST = (RayActorError, WorkerCrashedError, ActorUnavailableError)
# Calls queued on a board at once (see RayFarm.run_each).
QUEUED = 2
# A measurement's calls per board, at most (see _calls_of).
CALLS_PER_BOARD = 32


@ray.remote(num_cpus=0, resources={RESOURCE: 1})
class Board:
    """One board: measures batches of a queue it keeps after the first."""

    def __init__(self, cores: list[int] | None = None) -> None:
        self._queues: dict[str, LayerQueue] = {}
        # A host's boards share it: each computes on cores of its own.
        if cores and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cores)

    def pid(self) -> int:
        return os.getpid()

    def measure(self, token: str, holder: list[Any], batches: list[Batch],
                bench: Bench) -> list[list[Timing]]:
        # The queue travels inside a list so that Ray hands over its reference, fetched
        # once per board instead of once per call.
        if token not in self._queues:
            self._queues = {token: ray.get(holder[0])}
        return [time_blocks(self._queues[token], batch, bench) for batch in batches]

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """Any other work that must have a board to itself (paleozoic bench's models)."""
        return function(*args)


class _NotMainThreadNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _init(**options: Any) -> None:
    # Started in a thread (paleozoic.farm.starting), ray.init leaves the process's SIGTERM
    # handling as it is and warns; that is what a library should do, so the note is dropped.
    # The cluster's processes die with this one either way (Ray's fate sharing).
    note = _NotMainThreadNote()
    worker_log = logging.getLogger("ray._private.worker")
    worker_log.addFilter(note)
    try:
        ray.init(log_to_driver=False, logging_level=logging.WARNING, **options)
    finally:
        worker_log.removeFilter(note)


def _join(address: str, **options: Any) -> None:
    """Connects to the running cluster at `address`, or says why it could not."""
    try:
        _init(address=address, **options)
    except ConnectionError as err:
        # Ray connects to an address it is given without a token unless told to (a local
        # token is not sent to a cluster named by its address), while `ray start --head`
        # protects a cluster with the token of its host once there is one (Ray 2.60):
        # such a join fails after about 20 s of retries, saying only that it could not
        # connect.
        where = "RAY_AUTH_TOKEN or ~/.ray/auth_token"  # where Ray reads a token from
        if os.environ.get(AUTH_MODE, "").lower() == "token":
            advice = f"check that the address is the head's and that {where} holds its token"
        else:
            advice = (f"if the cluster uses Ray's token authentication (`ray start` turns it "
                      f"on where a token exists), run with {AUTH_MODE}=token and the "
                      f"cluster's token in {where}; for a cluster on this host, --ray auto "
                      f"finds it and its token")
        raise OptimizerError(f"could not join the Ray cluster at {address} ({err}): "
                             f"{advice}") from err


def _stop_autoscaler_monitor() -> None:
    # ray.shutdown stops the GCS before the autoscaler's monitor, whose SIGTERM handler then
    # reports to the stopped GCS until it is killed a second later (Ray 2.x). A local
    # cluster's monitor has nothing to report: stopped first, shutdown takes a third of a
    # second instead of 1.4 (a private hook: where it is missing, shutdown waits as before).
    worker = getattr(getattr(ray, "_private", None), "worker", None)
    node = getattr(worker, "_global_node", None)
    try:
        if node is not None:
            node.kill_monitor(check_alive=False)
    except Exception as err:  # noqa: BLE001 - a shutdown the usual way is fine too
        logger.debug("could not stop Ray's autoscaler monitor first: %s", err)


def _local_cluster(workers: int) -> dict[str, Any]:
    """ray.init's options for a local cluster of `workers` boards on this host."""
    # Ray starts a Python worker for each CPU it is given, ahead of any work. The boards are
    # its only work, so it is given a CPU per board and each early worker becomes a board.
    # Given the host's cores, it started workers that never worked: on this 2-core host, one
    # beside a single board (1.5 CPU-seconds and 80 MB); on a many-core host, one per core.
    # The boards take none of Ray's CPUs (Board's num_cpus=0): RayFarm._slots pins them.
    return {"num_cpus": workers, "resources": {RESOURCE: workers}, "include_dashboard": False}


def _calls_of(batches: Sequence[Batch], boards: int) -> list[list[int]]:
    """The batches (each one session) cut into calls of consecutive batches: each a
    CALLS_PER_BOARD-th of a board's share of the layers at most, and the last ones shrinking
    with the work left, so that the boards finish together. A call costs this process about
    2 ms of Ray's work: at a call per session, DenseNet-121's 1,115 sessions (76 ms each)
    cost it 11.5 CPU-seconds, 94 calls 9.6, and with a board on each core that CPU is taken
    from the boards. The sessions, hence the timings, are the same."""
    sizes = [sum(stop - start for start, stop, _ in batch) for batch in batches]
    boards = max(1, boards)
    left = sum(sizes)
    most_ever = left / (CALLS_PER_BOARD * boards)
    calls: list[list[int]] = []
    held = most = 0.0
    for b, size in enumerate(sizes):
        if not calls or held + size > most:
            most = min(most_ever, left / (4 * boards))
            calls.append([])
            held = 0.0
        calls[-1].append(b)
        held += size
        left -= size
    return calls


class RayFarm:
    """Boards on a local Ray cluster of `workers` boards, or on the cluster at `address`."""

    def __init__(self, workers: int | None = None, address: str | None = None,
                 wall_clock: bool = False) -> None:
        if (workers is None) == (address is None):
            raise ValueError("give workers (a local cluster) or address (a running one)")
        self.lost = 0          # boards lost while measuring
        self.retried = 0       # blocks (models) measured again because their board was lost
        self.most = 0          # boards at once, at the most
        self._started = False
        self._actors: list[Any] = []
        self._queues: dict[int, tuple[LayerQueue, str, Any]] = {}
        self._empty: str | None = None
        self._idle: list[Any] = []
        self._slots: list[list[int]] = []           # a local farm's boards' cores
        self._slot_of: dict[int, int] = {}          # id(board) -> its slot
        if workers is not None:
            check_workers(workers, wall_clock)
            cores = (sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else list(range(os.cpu_count() or 1)))
            self._slots = [cores[k * len(cores) // workers:(k + 1) * len(cores) // workers]
                           or [cores[k % len(cores)]] for k in range(workers)]
            if not ray.is_initialized():  # else: the caller's cluster, with its boards
                _init(**_local_cluster(workers), runtime_env=self._runtime_env())
                self._started = True
        elif not ray.is_initialized():
            try:
                _join(address, runtime_env=self._runtime_env())
            except OptimizerError:
                self.close()  # its empty working folder
                raise
            self._started = True
        self._grow()
        if not self._actors:
            self.close()
            where = f" at {address}" if address else ""
            raise OptimizerError(
                f"the Ray cluster{where} offers no {RESOURCE}: start a worker on each board's "
                f"host with `ray start --address HEAD:6379 --resources "
                f"'{{\"{RESOURCE}\": 1}}'`")

    def _runtime_env(self) -> dict[str, Any] | None:
        # Ray puts the driver's folder first on its workers' path: run from a source
        # checkout, the workers would import its paleozoic, which has no compiled runtime.
        # There, an empty working folder of their own keeps them on the installed package
        # (Ray's runtime-environment agent then sets up each worker: about a second more).
        mine = Path(__file__).resolve().parents[1]  # this paleozoic
        theirs = Path.cwd() / "paleozoic"
        if not theirs.is_dir() or theirs.resolve() == mine:
            return None
        self._empty = tempfile.mkdtemp(prefix="paleozoic-ray-")
        return {"working_dir": self._empty}

    def _grow(self) -> None:
        """Starts a board for every unit of the resource the cluster has and no board holds
        (nodes that registered since, boards lost)."""
        units = int(ray.cluster_resources().get(RESOURCE, 0))
        new = max(0, units - len(self._actors))
        for _ in range(new):
            cores = None
            if self._slots:  # the slot no live board holds, or the least held
                held = [list(self._slot_of.values()).count(k) for k in range(len(self._slots))]
                slot = held.index(min(held))
                cores = self._slots[slot]
            board = Board.remote(cores)
            if cores is not None:
                self._slot_of[id(board)] = slot
            self._actors.append(board)
        self.most = max(self.most, len(self._actors))
        if new:
            logger.info("%d board(s) started; %d in all", new, len(self._actors))

    @property
    def actors(self) -> list[Any]:
        return list(self._actors)

    @property
    def idle(self) -> list[Any]:
        """The boards the running `measure` gives the next batches to, first first."""
        return list(self._idle)

    def boards(self) -> int:
        return len(self._actors)

    def _queue_ref(self, queue: LayerQueue) -> tuple[str, Any]:
        if id(queue) not in self._queues:  # the queue is kept, so its id is not reused
            self._queues[id(queue)] = (queue, f"q{len(self._queues)}", ray.put(queue))
        _, token, ref = self._queues[id(queue)]
        return token, ref

    def measure(self, queue: LayerQueue, batches: Iterable[Batch],
                bench: Bench) -> Iterator[tuple[Batch, list[Timing]]]:
        token, ref = self._queue_ref(queue)
        batches = list(batches)
        # The boards as they are now (run_each starts any the cluster has gained since).
        groups = _calls_of(batches, len(self._actors))
        calls = [(lambda board, group=group: board.measure.remote(
                      token, [ref], [batches[b] for b in group], bench),
                  sum(len(batches[b]) for b in group)) for group in groups]
        for c, timings in self.run_each(calls):
            yield from ((batches[b], found) for b, found in zip(groups[c], timings))

    def run_each(self, calls: Sequence[tuple[Callable[[Any], Any], int]],
                 what: str = "block") -> Iterator[tuple[int, Any]]:
        """Each call (a board -> the ObjectRef of a method call on it, with how many `what`s
        it measures, for the log) on a free board; (index, result) as each finishes. A call
        whose board is lost is made again on another. Each board has QUEUED calls at once,
        so that it starts the next while this process takes in the last one's result."""
        self._grow()
        pending = deque(range(len(calls)))
        idle = self._idle = [board for _ in range(QUEUED) for board in self._actors]
        running: dict[Any, tuple[Any, int]] = {}
        try:
            while pending or running:
                while pending and idle:
                    board, c = idle.pop(0), pending.popleft()
                    running[calls[c][0](board)] = (board, c)
                if not running:
                    raise OptimizerError(f"every board of the farm is lost; {len(pending)} "
                                         f"piece(s) of work were not done")
                (done,), _ = ray.wait(list(running), num_returns=1)
                board, c = running.pop(done)
                try:
                    result = ray.get(done)
                except _LOST as err:
                    self._lose(board, calls[c][1], what, err)
                    idle[:] = [b for b in idle if b is not board]
                    pending.appendleft(c)
                    before = set(map(id, self._actors))
                    self._grow()
                    idle.extend(a for _ in range(QUEUED) for a in self._actors
                                if id(a) not in before)
                    continue
                idle.append(board)
                yield c, result
        except BaseException:
            at_work = {id(board): board for board, _ in running.values()}
            for board in at_work.values():  # stop the work in flight
                ray.kill(board)
                if any(a is board for a in self._actors):  # not one lost already
                    self._actors.remove(board)
                self._slot_of.pop(id(board), None)
            raise

    def _lose(self, actor: Any, count: int, what: str, err: Exception) -> None:
        """`count` `what`s were lost with `actor` (its other queued call may follow)."""
        self.retried += count
        if not any(a is actor for a in self._actors):
            logger.info("the lost board's queued %d %s(s) are measured again too", count, what)
            return
        self.lost += 1
        self._actors.remove(actor)
        self._slot_of.pop(id(actor), None)
        logger.warning("a board was lost while measuring %d %s(s) (%s); they are measured "
                       "again on another board (%d board(s) left)", count, what,
                       type(err).__name__, len(self._actors))

    def summary(self) -> list[str]:
        line = f"measured on a Ray farm of {self.most} board(s)"
        if self.lost:
            line += (f"; {self.lost} board(s) lost while measuring, their {self.retried} "
                     f"block(s) measured again on the others")
        return [line]

    def close(self) -> None:
        for actor in self._actors:
            ray.kill(actor)
        self._actors.clear()
        self._slot_of.clear()
        self._queues.clear()
        if self._started:
            _stop_autoscaler_monitor()
            ray.shutdown()
            self._started = False
        if self._empty is not None:
            shutil.rmtree(self._empty, ignore_errors=True)
            self._empty = None
