"""Codegen: Jinja templates -> session.cpp, weights.bin, CMakeLists.txt, plan.json."""

from paleozoic.codegen.emit import session_files, write_session
from paleozoic.codegen.weights import write_weights

__all__ = ["session_files", "write_session", "write_weights"]
