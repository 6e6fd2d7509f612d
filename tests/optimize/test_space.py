"""Search-space sizes: paper Eq. 3 and the exact count under the fusion constraints."""

from __future__ import annotations

from math import comb

from paleozoic.optimize import SearchSpace, eq3_space
from paleozoic.optimize.report import sci, space_lines


def test_eq3_closed_form() -> None:
    for n in (2, 3, 10, 32, 228):
        assert eq3_space(n) == 32 * (33 ** (n - 1) - 1)
    assert sci(eq3_space(32)) == "3.794e48"


def test_size_all_fusible_is_eq3_plus_single_block() -> None:
    for n in (1, 2, 5, 12):
        space = SearchSpace(n, (True,) * n)
        assert space.size() == eq3_space(n) + 32


def test_size_with_non_fusible_layers() -> None:
    # Layer 2 must stand alone: cuts at 2 and 3 are forced; the other 3 cut points are free.
    space = SearchSpace(6, (True, True, False, True, True, True), mps=(1, 2))
    assert space.forced_cuts() == (2, 3)
    brute = sum(2 ** (i + 3) * comb(3, i) for i in range(4))  # i free cuts + 2 forced
    assert space.size() == brute


def test_space_lines(queue) -> None:
    text = "\n".join(space_lines(queue, SearchSpace.from_queue(queue)))
    n = len(queue.layers)
    assert f"n = {n}" in text
    assert sci(eq3_space(n)) in text
    assert "every kind in this model is fusible" in text
    floats = len(queue.inputs) + len(queue.outputs)
    assert (f"with load balance (tune --knobs balance): {floats} graph input(s) and output(s)"
            in text)


def test_max_stop_is_the_longest_allowed_block_from_each_start() -> None:
    """max_stop walks once; it agrees with `allows` over spaces with cuts and segments."""
    import random

    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 12)
        fusible = tuple(rng.random() > 0.2 for _ in range(n))
        segments = tuple(sorted(rng.randint(0, 3) for _ in range(n))) if rng.random() > 0.5 \
            else ()
        space = SearchSpace(n=n, fusible=fusible, segments=segments)
        for start in range(n):
            longest = max(stop for stop in range(start + 1, n + 1)
                          if space.allows(start, stop) or stop == start + 1)
            assert space.max_stop(start) == longest, (fusible, segments, start)
