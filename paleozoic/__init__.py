"""Paleozoic: ONNX to hand-editable C++ inference sessions over a CNML-style SDK."""

import os as _os

__version__ = "0.1.0"

# The runtimes (both SDKs) run each op as an OpenMP parallel region, and libgomp reads its
# wait policy once, when it is loaded. Its default spins between regions: when another
# process holds a core, a waiting thread burns the time slice the thread it waits for
# needs, and a 2-thread ResNet-50 forward on oneDNN went from 35 ms to 200-460 ms on a
# loaded 2-core machine (benchmarks/results/backends.md). Passive waiting, unless the user
# chose otherwise; subprocesses (emitted sessions run from Python) inherit it.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")
