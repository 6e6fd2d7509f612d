"""Where the oneDNN wheels put their files, from Python's package metadata (the RECORD of
each wheel), so the build finds them under any install scheme and inside pip's isolated
build environment alike. The top CMakeLists.txt runs this file as a script (standard
library only: paleozoic is not importable while it is being built), and paleozoic.runner.sdk
imports it at run time, so both look the same way.

    python paleozoic/onednn_wheel.py cmake-dir   # folder of dnnl-config.cmake, or nothing
    python paleozoic/onednn_wheel.py library     # libdnnl.so.3, or nothing
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

DEVEL_WHEEL = "onednn-devel-cpu-gomp"
RUNTIME_WHEEL = "onednn-cpu-gomp"


def wheel_file(wheel: str, name: str) -> Path | None:
    """The installed file called `name` of the distribution `wheel`, or None."""
    try:
        files = metadata.distribution(wheel).files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == name:
            path = Path(file.locate()).resolve()
            if path.is_file():
                return path
    return None


def main(argv: list[str]) -> int:
    what = {"cmake-dir": (DEVEL_WHEEL, "dnnl-config.cmake"),
            "library": (RUNTIME_WHEEL, "libdnnl.so.3")}
    if len(argv) != 1 or argv[0] not in what:
        sys.stderr.write(f"usage: onednn_wheel.py {{{'|'.join(what)}}}\n")
        return 2
    path = wheel_file(*what[argv[0]])
    if path is not None:
        sys.stdout.write(f"{path.parent if argv[0] == 'cmake-dir' else path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
