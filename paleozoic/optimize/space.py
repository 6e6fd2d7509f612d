"""The search space an optimizer explores: where the queue may be cut, which MPs and which
precisions a block may take, plus the progress channel the framework hands to the optimizer.

Also the space's size: the paper's Eq. 3 and the exact count under the fusion constraints
actually in force (Python integers, no overflow).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import Callable, Sequence

from paleozoic.ir import LayerQueue
from paleozoic.ir.plan import MP_MAX, MP_MIN, Precision
from paleozoic.ops import KINDS

Report = Callable[[float, float], None]
"""report(fraction_done in [0, 1], best_cost_so_far_us); the CLI draws a progress bar."""

ALL_MPS: tuple[int, ...] = tuple(range(MP_MIN, MP_MAX + 1))
FP32_ONLY: tuple[Precision, ...] = (Precision.FP32,)
# Most precise first: searches break cost ties towards the earlier (more accurate) choice.
PRECISION_ORDER: tuple[Precision, ...] = (Precision.FP32, Precision.FP16, Precision.INT8)


def _no_report(fraction: float, best_cost: float) -> None:
    return None


@dataclass(frozen=True)
class SearchSpace:
    """n layers; the MP choices per block; which layers may join a multi-layer block.

    A block [start, stop) is allowed when it has one layer, or when every layer in it is
    of a fusible kind (KINDS[kind].fusible), and when all its layers are in one `segment`
    (layers of a run-time If's branch are a segment of their own: the session runs them
    inside an if). Multi-layer blocks are fused; one-layer blocks are not. Each block
    computes in one of `precisions` (fp32 only unless asked).

    A block's choice is an (mp, precision) pair; `choices` lists them precision-major
    (all MPs in fp32 first), so with fp32 only choice k is mps[k], as before precisions.
    """

    n: int
    fusible: tuple[bool, ...]
    mps: tuple[int, ...] = ALL_MPS
    report: Report = field(default=_no_report, compare=False, repr=False)
    precisions: tuple[Precision, ...] = FP32_ONLY
    # Per layer, non-decreasing: a block never spans two (empty: all layers in one).
    segments: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.fusible) != self.n:
            raise ValueError(f"fusible mask has {len(self.fusible)} entries for {self.n} layers")
        if self.segments and len(self.segments) != self.n:
            raise ValueError(f"segments has {len(self.segments)} entries for {self.n} layers")
        if not self.mps or any(not MP_MIN <= mp <= MP_MAX for mp in self.mps):
            raise ValueError(f"mps {self.mps} must be non-empty and within {MP_MIN}..{MP_MAX}")
        if list(self.mps) != sorted(set(self.mps)):
            raise ValueError(f"mps {self.mps} must be strictly increasing")
        try:
            # Frozen dataclass: normalise "fp16" to Precision.FP16 in place, once.
            object.__setattr__(self, "precisions", tuple(Precision(p) for p in self.precisions))
        except ValueError:
            raise ValueError(f"precisions {self.precisions} must be among "
                             f"{', '.join(p.value for p in PRECISION_ORDER)}") from None
        if not self.precisions:
            raise ValueError("precisions must not be empty")
        if list(self.precisions) != sorted(set(self.precisions), key=PRECISION_ORDER.index):
            raise ValueError(f"precisions {[p.value for p in self.precisions]} must be "
                             f"distinct and ordered most precise first (fp32, fp16, int8)")

    @classmethod
    def from_queue(cls, queue: LayerQueue, mps: Sequence[int] = ALL_MPS,
                   report: Report = _no_report,
                   precisions: Sequence[Precision] = FP32_ONLY) -> SearchSpace:
        fusible = tuple(KINDS[layer.kind].fusible for layer in queue.layers)
        return cls(n=len(queue.layers), fusible=fusible, mps=tuple(mps), report=report,
                   precisions=canonical_precisions(precisions),
                   segments=branch_segments(queue))

    @property
    def max_mp(self) -> int:
        return self.mps[-1]

    @property
    def choices(self) -> tuple[tuple[int, Precision], ...]:
        """Every (mp, precision) a block may take, precision-major."""
        return tuple((mp, p) for p in self.precisions for mp in self.mps)

    def allows(self, start: int, stop: int) -> bool:
        """May queue.layers[start:stop] be one block?"""
        if not 0 <= start < stop <= self.n:
            return False
        if self.segments and self.segments[start] != self.segments[stop - 1]:
            return False
        return stop - start == 1 or all(self.fusible[start:stop])

    def forced_cuts(self) -> tuple[int, ...]:
        """Cut points (1..n-1) every plan must have: both sides of a non-fusible layer."""
        cuts = set()
        for i, ok in enumerate(self.fusible):
            if not ok:
                cuts.update(c for c in (i, i + 1) if 0 < c < self.n)
        cuts.update(i for i in range(1, len(self.segments))
                    if self.segments[i] != self.segments[i - 1])
        return tuple(sorted(cuts))

    def max_stop(self, start: int) -> int:
        """The largest stop such that [start, stop) is an allowed block."""
        if not self.fusible[start]:
            return start + 1
        # allows(start, stop + 1), knowing that [start, stop) is allowed: one step each.
        stop = start + 1
        while (stop < self.n and self.fusible[stop]
               and (not self.segments or self.segments[stop] == self.segments[start])):
            stop += 1
        return stop

    def with_report(self, report: Report) -> SearchSpace:
        return SearchSpace(self.n, self.fusible, self.mps, report, self.precisions,
                           self.segments)

    def with_precisions(self, precisions: Sequence[Precision]) -> SearchSpace:
        return SearchSpace(self.n, self.fusible, self.mps, self.report,
                           canonical_precisions(precisions), self.segments)

    # ---- size ------------------------------------------------------------------------
    def size(self) -> int:
        """Plans in this space: cut sets with only allowed blocks, times the (mp, precision)
        choices per block.

        Counts exactly (DP over cut positions): ways[j] = sum over allowed [i, j) of
        ways[i] * len(choices). Includes the single-block plan, which Eq. 3's sum leaves out.
        """
        choices = len(self.mps) * len(self.precisions)
        ways = [0] * (self.n + 1)
        ways[0] = 1
        for stop in range(1, self.n + 1):
            total = 0
            for start in range(stop - 1, -1, -1):
                if not self.allows(start, stop):
                    break
                total += ways[start] * choices
            ways[stop] = total
        return ways[self.n]


def branch_segments(queue: LayerQueue) -> tuple[int, ...]:
    """A segment number per layer, the next one wherever the run-time If branch a layer
    runs in (Layer.branch) changes; () when the queue has no branches."""
    if not any(layer.branch for layer in queue.layers):
        return ()
    segments, current = [], 0
    for i, layer in enumerate(queue.layers):
        if i and layer.branch != queue.layers[i - 1].branch:
            current += 1
        segments.append(current)
    return tuple(segments)


def canonical_precisions(precisions: Sequence[Precision | str]) -> tuple[Precision, ...]:
    """Distinct precisions, most precise first ("fp16" and Precision.FP16 both accepted)."""
    return tuple(sorted({Precision(p) for p in precisions}, key=PRECISION_ORDER.index))


def eq3_space(n: int, mp_choices: int = MP_MAX) -> int:
    """Paper Eq. 3: sum over i = 1..n-1 of 32^(i+1) * C(n-1, i) = 32 * (33^(n-1) - 1)."""
    return sum(mp_choices ** (i + 1) * comb(n - 1, i) for i in range(1, n))
