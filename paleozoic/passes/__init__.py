"""Inference-only rewrites on the LayerQueue, run in a fixed order.

Dropout and Identity vanish in the frontend (TVM maps them to the identity); the paper's
substitutions of Gemm (fully-connected) and weighted BatchNorm (BatchNorm + Scale) happen
there too, because they decide which layers exist at all. What is left for passes is
clean-up: drop layers nothing reads, collapse reshapes, merge per-channel affine layers,
fold biases, move element-wise layers from between reshapes that then cancel, compute
repeated subexpressions once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from paleozoic.ir import LayerQueue
from paleozoic.passes.affine import fold_bias_into_producer, merge_scale_chains
from paleozoic.passes.branches import place_branches
from paleozoic.passes.dead import drop_unread_layers
from paleozoic.passes.duplicates import merge_duplicate_layers
from paleozoic.passes.host import merge_host_copies
from paleozoic.passes.reshape import (
    collapse_reshapes,
    drop_flatten_before_fc,
    move_elementwise_before_reshapes,
    move_scales_before_channel_reshapes,
)

logger = logging.getLogger(__name__)

Pass = Callable[[LayerQueue], int]

DEFAULT_PASSES: tuple[Pass, ...] = (
    drop_unread_layers,
    collapse_reshapes,
    drop_flatten_before_fc,
    move_scales_before_channel_reshapes,
    merge_scale_chains,
    fold_bias_into_producer,
    move_elementwise_before_reshapes,
    collapse_reshapes,
    merge_host_copies,
    merge_duplicate_layers,
    place_branches,  # last: the order the session runs in, branches grouped
)


def run_passes(queue: LayerQueue, passes: tuple[Pass, ...] = DEFAULT_PASSES) -> LayerQueue:
    for rewrite in passes:
        changed = rewrite(queue)
        logger.info("pass %s: %d change(s)", rewrite.__name__, changed)
    queue.prune_unused_weights()
    return queue


__all__ = ["DEFAULT_PASSES", "run_passes"]
