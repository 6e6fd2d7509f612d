"""Which SDK the runtime computes with: the CPU mock (the default and the reference) or
oneDNN (runtime_cpp/backends/onednn: the same SDK interface over Intel's oneDNN, built by every
install on Linux x86-64 and usable once the `onednn` extra's wheels are installed).

Each SDK has its own pybind module over the same wrapper (paleozoic._runtime,
paleozoic._runtime_onednn) and its own CMake target (Paleozoic::runtime,
Paleozoic::runtime_onednn); an emitted session is built against one of them, and its
folder remembers which (OUT/build/paleozoic-sdk), so running, verifying and timing it use
that build.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import os
from pathlib import Path
from types import ModuleType

from paleozoic import onednn_wheel
from paleozoic.errors import BuildError

log = logging.getLogger(__name__)

SDKS = ("mock", "onednn")
DEFAULT_SDK = "mock"
_MODULES = {"mock": "paleozoic._runtime", "onednn": "paleozoic._runtime_onednn"}
_SDK_FILE = "paleozoic-sdk"


def check_sdk(sdk: str) -> str:
    if sdk not in SDKS:
        raise ValueError(f"unknown SDK {sdk!r}; choose one of {', '.join(SDKS)}")
    return sdk


# The runtimes (both SDKs) run each op as an OpenMP parallel region, and libgomp reads how
# its idle threads wait once, when it is loaded. Its default spins for about 300,000 turns
# between regions: when another process holds a core, a waiting thread burns the time slice
# the thread it waits for needs (a 2-thread ResNet-50 forward on oneDNN went from 35 ms to
# 200-460 ms on a loaded 2-core machine). Sleeping at once (OMP_WAIT_POLICY=passive) costs
# a futex wake per region instead: on an idle machine SqueezeNet's forward took 6.7 ms
# against 3.0 ms spinning, Inception-v1's 19.6 against 8.8. A short spin keeps nearly all
# of the idle speed (3.1 and 9.0 ms) and bounds the loss under load (Inception-v1 with both
# cores taken: 25.7 ms, passive 38.0; ResNet-50: 46.6, passive 34.6; numbers in
# benchmarks/results/backends.md). Applied, unless the user chose a policy or a spin count,
# where a runtime is loaded (runtime_module) and to the emitted sessions Python runs
# (omp_environment).
SPIN_COUNT = "1000"


def omp_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with the runtimes' OpenMP wait policy added, unless
    it has one: for an emitted session run as a subprocess."""
    env = dict(os.environ if env is None else env)
    if "OMP_WAIT_POLICY" not in env and "GOMP_SPINCOUNT" not in env:
        env["GOMP_SPINCOUNT"] = SPIN_COUNT
    return env


def runtime_module(sdk: str = DEFAULT_SDK) -> ModuleType:
    """The pybind runtime module computing with `sdk`, loaded with the runtimes' OpenMP wait
    policy (omp_environment) when this process has not loaded libgomp yet."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    name = _MODULES[check_sdk(sdk)]
    if sdk != "onednn":
        return importlib.import_module(name)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:
            raise
        raise BuildError(
            f"the oneDNN SDK was not built into this paleozoic ({name} is missing): its "
            "build needs the onednn-devel-cpu-gomp wheel, which exists for Linux x86-64 only "
            "and which pip's build isolation brings in; with --no-build-isolation, `pip "
            "install 'paleozoic[onednn]'` first, then reinstall paleozoic") from err
    except ImportError as err:
        # The module is there but the loader did not find libdnnl.so.3 beside the
        # environment's site-packages (its RPATH): an install without the extra, or an
        # install scheme that puts the wheel's library elsewhere.
        library = onednn_wheel.wheel_file(onednn_wheel.RUNTIME_WHEEL, "libdnnl.so.3")
        if library is None:
            raise BuildError(
                "the oneDNN SDK needs oneDNN's library (libdnnl.so.3, the onednn-cpu-gomp "
                "wheel), which is not installed in this Python environment: "
                f"pip install 'paleozoic[onednn]' ({err})") from err
        log.debug("loading %s for %s", library, name)
        try:
            ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
            return importlib.import_module(name)
        except (OSError, ImportError) as again:
            raise BuildError(
                f"{name} does not load with {library}: {again}; reinstall both with "
                "`pip install --force-reinstall 'paleozoic[onednn]'`") from again


def sdk_available(sdk: str) -> bool:
    try:
        runtime_module(sdk)
    except (BuildError, ImportError):
        return False
    return True


def sdk_cmake_defines(sdk: str) -> list[str]:
    """What an emitted session's CMake configure needs besides CMAKE_PREFIX_PATH to link
    `sdk`: for oneDNN, the onednn-devel-cpu-gomp wheel's CMake config, wherever this
    environment's install scheme put it (PaleozoicRuntimeConfig.cmake looks beside
    site-packages, and where the runtime's build found a oneDNN installed otherwise)."""
    if check_sdk(sdk) != "onednn":
        return []
    config = onednn_wheel.wheel_file(onednn_wheel.DEVEL_WHEEL, "dnnl-config.cmake")
    return [f"-Ddnnl_DIR={config.parent}"] if config is not None else []


def cmake_target(sdk: str) -> str:
    return "Paleozoic::runtime" if check_sdk(sdk) == "mock" else f"Paleozoic::runtime_{sdk}"


def built_sdk(out: str | Path) -> str:
    """The SDK OUT/build was built for (the mock when it was built before SDKs existed)."""
    marker = Path(out) / "build" / _SDK_FILE
    return marker.read_text().strip() if marker.is_file() else DEFAULT_SDK


def remember_sdk(out: str | Path, sdk: str) -> None:
    (Path(out) / "build" / _SDK_FILE).write_text(f"{check_sdk(sdk)}\n")
