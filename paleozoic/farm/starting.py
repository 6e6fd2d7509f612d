"""A farm that starts in the background.

A Ray cluster takes seconds to come up (importing Ray, starting its processes and the
boards'), which a search would otherwise wait for before loading its model: started in a
thread, the cluster comes up while the search loads the model, prices its blocks on the
device model and names them, and the search waits only where it first asks the farm for
boards. An error of the start (Ray missing, a cluster without boards) is raised there.

A search that may need no board (a re-run whose timings are all kept) starts the farm where
it first asks for one instead (`eager=False`): on two cores, a cluster starting beside the
model's load took about 6 CPU-seconds from it, and a DenseNet-121 re-run took 11.8 s
instead of 6.4-7.6 s, for boards nobody used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from paleozoic.farm.service import Farm
from paleozoic.ir import LayerQueue
from paleozoic.runner.block_bench import Batch, Bench, Timing

logger = logging.getLogger(__name__)


class StartingFarm:
    """The farm `start()` returns, made in a thread of its own (see the module notes)."""

    def __init__(self, start: Callable[[], Farm], eager: bool = True) -> None:
        self._start = start
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paleozoic-farm")
        self._starting: Future[Farm] | None = self._pool.submit(start) if eager else None

    def _ready(self) -> Farm:
        if self._starting is None:
            logger.info("starting the farm: a block's timing is not kept yet")
            self._starting = self._pool.submit(self._start)
        return self._starting.result()

    def boards(self) -> int:
        return self._ready().boards()

    def measure(self, queue: LayerQueue, batches: Iterable[Batch],
                bench: Bench) -> Iterator[tuple[Batch, list[Timing]]]:
        return self._ready().measure(queue, batches, bench)

    def summary(self) -> list[str]:
        if self._starting is None:
            return ["no board was started: every timing the search needed was kept"]
        return self._ready().summary()

    def close(self) -> None:
        # A start cannot be cut short: what it started is stopped once it is up. The thread
        # lives until then, as the cluster's processes die with the thread that started
        # them (Linux's parent-death signal follows the thread).
        try:
            if self._starting is None:  # never used, never started
                return
            try:
                farm = self._ready()
            except Exception:  # it started nothing; its error is the search's to raise
                return
            farm.close()
        finally:
            self._pool.shutdown()
