"""The C++ names of a session's variables: layer and tensor names made identifiers that do
not collide with what the session's main() (wrapper or raw form) declares itself."""

from __future__ import annotations

from paleozoic.codegen.escape import CPP_KEYWORDS
from paleozoic.codegen.escape import cpp_ident as _escaped_ident

# Names the session's main() uses itself; layers with these names get a trailing "_".
RESERVED = CPP_KEYWORDS | {
    "main", "argc", "argv", "options", "device", "weights", "blocks", "block", "start",
    "wall", "wall_ms", "forward", "run", "error", "pz", "std", "kWeightsId", "stages",
    "kDataParallelism", "kChannel",
    # and the raw form's main() (emit="raw")
    "queue", "dev", "zeros", "walls", "wall_start", "end", "block_us", "total_us", "status",
    "i", "CHECK",
}


def cpp_ident(name: str) -> str:
    """A session variable's name for a layer or tensor name (not yet unique)."""
    return _escaped_ident(name, RESERVED)
