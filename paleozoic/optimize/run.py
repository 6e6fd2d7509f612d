"""The framework side of the hook: run an optimizer, check it left the queue alone, and
validate the plan it returned."""

from __future__ import annotations

import hashlib
import logging
import time
from contextlib import contextmanager
from typing import Iterator

from paleozoic.errors import OptimizerError
from paleozoic.ir import LayerQueue, Plan, PlanError
from paleozoic.optimize.base import Optimizer
from paleozoic.optimize.oracle import CostOracle, check_prices, plan_cost
from paleozoic.optimize.plans import fusible_kinds
from paleozoic.optimize.space import FP32_ONLY, SearchSpace

logger = logging.getLogger(__name__)


def queue_fingerprint(queue: LayerQueue) -> str:
    """A digest of everything an optimizer could change: layers (names, kinds, attributes,
    tensors, knobs), tensor shapes, inputs, outputs, and the weights' identity and shape.
    (Weight values are guarded by making the arrays read-only during the run.)"""
    digest = hashlib.blake2b(digest_size=16)
    for layer in queue.layers:
        digest.update(repr((layer.name, layer.op.op_type, sorted(layer.op.attrs.items()),
                            layer.inputs, layer.output, sorted(layer.weights.items()),
                            layer.precision)).encode())
    digest.update(repr((sorted(queue.tensors.items()), queue.inputs, queue.outputs)).encode())
    for name in sorted(queue.weights):
        array = queue.weights[name]
        digest.update(repr((name, id(array), array.shape, str(array.dtype))).encode())
    return digest.hexdigest()


@contextmanager
def _read_only_weights(queue: LayerQueue) -> Iterator[None]:
    """Weights are read-only while the optimizer runs: writing into one raises."""
    frozen = [a for a in queue.weights.values() if a.flags.writeable]
    for array in frozen:
        array.flags.writeable = False
    try:
        yield
    finally:
        for array in reversed(frozen):  # views before the arrays they view
            array.flags.writeable = True


def _observed(optimizer: Optimizer, cost: CostOracle) -> list | None:
    """The oracle's observer list if the optimizer overrides after_measure and the oracle
    reports measurements (has an `observers` list)."""
    overrides = type(optimizer).after_measure is not Optimizer.after_measure
    observers = getattr(cost, "observers", None)
    return observers if overrides and isinstance(observers, list) else None


def run_optimizer(optimizer: Optimizer, queue: LayerQueue, cost: CostOracle,
                  space: SearchSpace | None = None) -> Plan:
    """Runs `optimizer` on `queue` and returns its validated plan, with
    notes {"cost_us", "oracle"} (computed here, not trusted from the optimizer) and strategy = the optimizer's name.

    Raises OptimizerError naming the optimizer if it raises, modifies the queue, or returns
    something that is not a valid plan (the message names the offending block).

    A space with other precisions than fp32 needs an oracle that prices them; an optimizer
    that does not search precisions (searches_precision False) gets the space's fp32 part
    (fp32 must then be in the space) and a warning says so."""
    space = space or SearchSpace.from_queue(queue)
    if space.n != len(queue.layers):
        raise OptimizerError(f"search space has {space.n} layers, the queue {len(queue.layers)}")
    who = f"optimizer {optimizer.name!r} ({type(optimizer).__module__}." \
          f"{type(optimizer).__qualname__})"
    if space.precisions != FP32_ONLY and not optimizer.searches_precision:
        if FP32_ONLY[0] not in space.precisions:
            raise OptimizerError(f"{who} does not search precisions (searches_precision is "
                                 f"False) and the space leaves out fp32")
        logger.warning("%s does not search precisions; it runs on fp32 only", who)
        space = space.with_precisions(FP32_ONLY)
    try:
        check_prices(cost, space.precisions)
    except ValueError as err:
        raise OptimizerError(str(err)) from None
    before = queue_fingerprint(queue)
    observers = _observed(optimizer, cost)
    if observers is not None:
        observers.append(optimizer.after_measure)
    started = time.monotonic()
    try:
        with _read_only_weights(queue):
            plan = optimizer.optimize(queue, space, cost)
    except OptimizerError:
        raise
    except ValueError as err:
        if "read-only" in str(err):
            raise OptimizerError(f"{who} tried to write into the model's weights; "
                                 f"optimizers must only read the queue") from err
        raise OptimizerError(f"{who} failed: ValueError: {err}") from err
    except Exception as err:
        raise OptimizerError(f"{who} failed: {type(err).__name__}: {err}") from err
    finally:
        if observers is not None:
            observers.remove(optimizer.after_measure)
    seconds = time.monotonic() - started
    if queue_fingerprint(queue) != before:
        raise OptimizerError(f"{who} modified the model's layer queue; optimizers must only "
                             f"read the queue and return a Plan")
    if not isinstance(plan, Plan):
        raise OptimizerError(f"{who} returned {type(plan).__name__}, not a paleozoic.ir.Plan")
    try:
        plan.validate(queue, fusible_kinds())
    except PlanError as err:
        raise OptimizerError(f"{who} returned an invalid plan: {err}") from None
    bad_mp = [b.name for b in plan.blocks if b.mp not in space.mps]
    if bad_mp:
        raise OptimizerError(f"{who} returned an invalid plan: block {bad_mp[0]!r}: mp is "
                             f"not one of the search space's MPs {space.mps}")
    bad_precision = [b.name for b in plan.blocks
                     if {b.precision, *b.layer_precision.values()} - set(space.precisions)]
    if bad_precision:
        raise OptimizerError(f"{who} returned an invalid plan: block {bad_precision[0]!r}: "
                             f"precision is not one of the search space's "
                             f"{', '.join(p.value for p in space.precisions)}")
    plan.strategy = optimizer.name
    plan.model = plan.model or queue.source
    try:
        plan.notes["cost_us"] = plan_cost(plan, queue, cost)
    except ValueError as err:
        raise OptimizerError(f"{who} returned a plan its oracle cannot price: {err}") from None
    plan.notes["oracle"] = cost.name
    logger.info("%s: %d blocks, %.1f us under %s in %.2f s", optimizer.name, len(plan.blocks),
                plan.notes["cost_us"], cost.name, seconds)
    return plan
