"""`paleozoic debug`: where a session's numbers part from onnxruntime's, block by block and
layer by layer, named by ONNX node; and a plan that meets an accuracy budget."""

from __future__ import annotations

from paleozoic.accuracy.debug.analyse import CEILING_DB, JUMP_DB, Budget, DebugReport, measure
from paleozoic.accuracy.debug.fix import (
    FixResult, apply_changes, fix_plan, write_plan_atomic, write_text_atomic,
)
from paleozoic.accuracy.debug.folder import SessionFolder, load_folder
from paleozoic.accuracy.debug.text import report_lines

__all__ = ["CEILING_DB", "JUMP_DB", "Budget", "DebugReport", "FixResult", "SessionFolder",
           "apply_changes", "fix_plan", "load_folder", "measure", "report_lines",
           "write_plan_atomic", "write_text_atomic"]
