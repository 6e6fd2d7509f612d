"""Paleozoic: ONNX to hand-editable C++ inference sessions over a CNML-style SDK."""

import os as _os

__version__ = "0.1.0"

# The runtimes (both SDKs) run each op as an OpenMP parallel region, and libgomp reads how
# its idle threads wait once, when it is loaded. Its default spins for about 300,000 turns
# between regions: when another process holds a core, a waiting thread burns the time slice
# the thread it waits for needs (a 2-thread ResNet-50 forward on oneDNN went from 35 ms to
# 200-460 ms on a loaded 2-core machine). Sleeping at once (OMP_WAIT_POLICY=passive) costs
# a futex wake per region instead: on an idle machine SqueezeNet's forward took 6.7 ms
# against 3.0 ms spinning, Inception-v1's 19.6 against 8.8. A short spin keeps nearly all
# of the idle speed (3.1 and 9.0 ms) and bounds the loss under load (Inception-v1 with both
# cores taken: 25.7 ms, passive 38.0; ResNet-50: 46.6, passive 34.6; numbers in
# benchmarks/results/backends.md). Unless the user chose a policy or a spin count;
# subprocesses (emitted sessions run from Python) inherit it.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "1000"
