"""Paleozoic's IR (paper Table 3): Model, OpSet, F-Block, Layer, Operator, and the Plan."""

from paleozoic.ir.layer import Layer, LayerQueue, Operator, TensorInfo
from paleozoic.ir.model import FBlock, Model, OpSet
from paleozoic.ir.plan import Plan, PlanError, PlannedBlock

__all__ = [
    "FBlock", "Layer", "LayerQueue", "Model", "OpSet", "Operator", "Plan", "PlanError",
    "PlannedBlock", "TensorInfo",
]
