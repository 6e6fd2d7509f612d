"""A farm started in the background: used once it is up, its start's error raised where it
is first used, and what it started closed whatever the caller got to."""

from __future__ import annotations

import threading

import pytest

from paleozoic.errors import OptimizerError
from paleozoic.farm.service import LocalBoard
from paleozoic.farm.starting import StartingFarm


class _Recorded(LocalBoard):
    def __init__(self) -> None:
        self.closed = False
        self.thread = threading.current_thread()
        self.thread_alive_at_close = False

    def close(self) -> None:
        self.closed = True
        # A Ray cluster's processes die with the thread that started them.
        self.thread_alive_at_close = self.thread.is_alive()


def test_the_farm_starts_in_a_thread_and_is_closed_once_up() -> None:
    made: list[_Recorded] = []
    release = threading.Event()

    def start() -> _Recorded:
        release.wait(timeout=10)
        made.append(_Recorded())
        return made[0]

    farm = StartingFarm(start)
    release.set()                       # the caller went on while the start waited
    assert farm.boards() == 1
    assert made[0].thread is not threading.current_thread()
    farm.close()
    assert made[0].closed and made[0].thread_alive_at_close


def test_a_failed_start_is_raised_where_the_farm_is_first_used() -> None:
    def start() -> LocalBoard:
        raise OptimizerError("the Ray cluster offers no pz_board")

    farm = StartingFarm(start)
    with pytest.raises(OptimizerError, match="no pz_board"):
        farm.boards()
    farm.close()                        # nothing was started: nothing to close, no error


def test_a_lazy_farm_starts_where_it_is_first_used_and_not_before() -> None:
    made: list[_Recorded] = []

    def start() -> _Recorded:
        made.append(_Recorded())
        return made[-1]

    unused = StartingFarm(start, eager=False)
    assert unused.summary() == ["no board was started: every timing the search needed "
                                "was kept"]
    unused.close()
    assert made == []                   # never used: nothing started, nothing to stop

    used = StartingFarm(start, eager=False)
    assert made == []
    assert used.boards() == 1
    assert len(made) == 1 and made[0].thread is not threading.current_thread()
    assert used.summary() == []         # the started farm's own (LocalBoard says nothing)
    used.close()
    assert made[0].closed and made[0].thread_alive_at_close
