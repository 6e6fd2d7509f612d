"""Which SDK the runtime computes with: the CPU mock (the default and the reference) or
oneDNN (runtime_cpp/onednn: the same SDK interface over Intel's oneDNN, built when the
`onednn` extra is installed).

Each SDK has its own pybind module over the same wrapper (paleozoic._runtime,
paleozoic._runtime_onednn) and its own CMake target (Paleozoic::runtime,
Paleozoic::runtime_onednn); an emitted session is built against one of them, and its
folder remembers which (OUT/build/paleozoic-sdk), so running, verifying and timing it use
that build.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from paleozoic.errors import BuildError

SDKS = ("mock", "onednn")
DEFAULT_SDK = "mock"
_MODULES = {"mock": "paleozoic._runtime", "onednn": "paleozoic._runtime_onednn"}
_SDK_FILE = "paleozoic-sdk"


def check_sdk(sdk: str) -> str:
    if sdk not in SDKS:
        raise ValueError(f"unknown SDK {sdk!r}; choose one of {', '.join(SDKS)}")
    return sdk


def runtime_module(sdk: str = DEFAULT_SDK) -> ModuleType:
    """The pybind runtime module computing with `sdk`."""
    name = _MODULES[check_sdk(sdk)]
    try:
        return importlib.import_module(name)
    except ImportError as err:
        if sdk == "onednn":
            raise BuildError(
                "the oneDNN SDK is not built (paleozoic._runtime_onednn is missing): "
                "install oneDNN with `pip install 'paleozoic[onednn]'`, then reinstall "
                "paleozoic so its build finds it") from err
        raise


def sdk_available(sdk: str) -> bool:
    try:
        runtime_module(sdk)
    except (BuildError, ImportError):
        return False
    return True


def cmake_target(sdk: str) -> str:
    return "Paleozoic::runtime" if check_sdk(sdk) == "mock" else f"Paleozoic::runtime_{sdk}"


def built_sdk(out: str | Path) -> str:
    """The SDK OUT/build was built for (the mock when it was built before SDKs existed)."""
    marker = Path(out) / "build" / _SDK_FILE
    return marker.read_text().strip() if marker.is_file() else DEFAULT_SDK


def remember_sdk(out: str | Path, sdk: str) -> None:
    (Path(out) / "build" / _SDK_FILE).write_text(f"{check_sdk(sdk)}\n")
