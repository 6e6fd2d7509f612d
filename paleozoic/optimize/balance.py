"""The load-balance knob (Table 4; CNML's data-preprocess strategy): where each session input's
and output's float32 <-> float16 conversion runs.

On the host it costs host time (the cast, at the profile's host_convert_gbps) and the link
carries the device form; on the device the fusion op reading or writing the tensor casts it
at its edge (device time on the block's cores) and the link carries float32. The device
model prices both (ioConversionUs, device_model.h); the choice is per tensor and changes
nothing else, so each takes the side with the lower host plus device time. Tensors with
nothing to convert (an fp32 block's) or that cannot take a strategy (preprocess_refusal)
keep the default. Without a strategy a session casts its inputs on the device (a cast layer
in the block) and its outputs on the host, which is the baseline the line reports.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import numpy as np

from paleozoic.ir import LayerQueue, Plan
from paleozoic.ir.plan import Precision, preprocess_refusal

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IoConversion:
    """One session input or output: its choice and both sides' prices (host us, device us)."""

    tensor: str
    strategy: str                # "cpu_priority" or "mlu_priority"
    on_host: tuple[float, float]
    on_device: tuple[float, float]
    default_on_device: bool      # where a session without a strategy converts it

    @property
    def cost(self) -> float:
        return sum(self.on_device if self.strategy == "mlu_priority" else self.on_host)

    @property
    def default_cost(self) -> float:
        return sum(self.on_device if self.default_on_device else self.on_host)


def io_conversions(plan: Plan, queue: LayerQueue, profile: str | None = None,
                   ) -> list[IoConversion]:
    """The cheaper side for every graph input and output `plan` converts (float32 on the host,
    float16 on the device) and may give a strategy, in input then output order."""
    from paleozoic.runner.sdk import runtime_module

    rt = runtime_module()
    if profile is None:
        rt.reset_device_profile()
    else:
        rt.set_device_profile(str(profile))
    block_of = {name: block for block in plan.blocks for name in block.layers}
    producer = {layer.output: layer for layer in queue.layers}
    choices = []
    names = [info.name for info in queue.inputs] + list(queue.outputs)
    for name in names:
        if preprocess_refusal(plan, queue, name) is not None:
            continue
        is_input = name not in producer
        touching = ([layer for layer in queue.layers if name in layer.inputs] if is_input
                    else [producer[name]])
        blocks = {block_of[layer.name].name: block_of[layer.name] for layer in touching}
        if not blocks or all(block_of[layer.name].precision_of(layer.name) is Precision.FP32
                             for layer in touching):
            continue  # an fp32 block's tensor: nothing to convert
        elements = int(np.prod(queue.shape(name)))
        # Each fusion op touching the tensor casts it at its edge on its own cores.
        on_device = [rt.estimate_preprocess(elements, True, block.mp)
                     for block in blocks.values()]
        device_side = (on_device[0][0], sum(device for _, device in on_device))
        host_side = rt.estimate_preprocess(elements, False, max(b.mp for b in blocks.values()))
        strategy = "mlu_priority" if sum(device_side) < sum(host_side) else "cpu_priority"
        choices.append(IoConversion(name, strategy, tuple(host_side), device_side,
                                    default_on_device=is_input))
        logger.info("%s: host %.1f us, device %.1f us on the host; host %.1f us, device "
                    "%.1f us on the device: %s", name, *host_side, *device_side, strategy)
    return choices


def with_balance(plan: Plan, queue: LayerQueue, profile: str | None = None,
                 ) -> tuple[Plan, list[IoConversion]]:
    """`plan` with each convertible I/O tensor's strategy set to its cheaper side."""
    choices = io_conversions(plan, queue, profile)
    preprocess = dict(plan.preprocess)
    preprocess.update({choice.tensor: choice.strategy for choice in choices})
    return dataclasses.replace(plan, preprocess=preprocess), choices
