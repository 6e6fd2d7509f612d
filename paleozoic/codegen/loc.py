"""Lines of code of an emitted session, counted as the paper's Table 5 does: the model
loading code is left out.

Rule (applied to the wrapper and the raw form alike): count the non-blank lines that are
not comment-only (`//` after leading spaces), outside `// paleozoic: model loading begin`
... `// paleozoic: model loading end` (command line, weights.bin, input/output files).
"""

from __future__ import annotations

LOADING_BEGIN = "// paleozoic: model loading begin"
LOADING_END = "// paleozoic: model loading end"


def count_loc(source: str) -> int:
    count = 0
    loading = False
    for line in source.splitlines():
        text = line.strip()
        if text == LOADING_BEGIN:
            loading = True
        elif text == LOADING_END:
            loading = False
        elif not loading and text and not text.startswith("//"):
            count += 1
    return count


__all__ = ["LOADING_BEGIN", "LOADING_END", "count_loc"]
