"""SDK selection (paleozoic.runner.sdk): names, the folder's memory of its build, the errors when
the oneDNN SDK was not built or its library is not installed, where the oneDNN wheels'
files are found (paleozoic.onednn_wheel, which the runtime's CMake build runs too), and the
CLI options that take an SDK. scripts/check_install.sh checks a fresh install by hand."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from packaging.requirements import Requirement

from paleozoic import onednn_wheel
from paleozoic.runner import sdk
from paleozoic.cli import main
from paleozoic.errors import BuildError

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_sdk_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown SDK 'cuda'"):
        sdk.check_sdk("cuda")
    assert sdk.cmake_target("mock") == "Paleozoic::runtime"
    assert sdk.cmake_target("onednn") == "Paleozoic::runtime_onednn"


def test_folder_remembers_its_sdk(tmp_path: Path) -> None:
    assert sdk.built_sdk(tmp_path) == "mock"  # never built: the mock, the default
    (tmp_path / "build").mkdir()
    sdk.remember_sdk(tmp_path, "onednn")
    assert sdk.built_sdk(tmp_path) == "onednn"


def _failing_import(monkeypatch: pytest.MonkeyPatch, *errors: ImportError) -> list[str]:
    """Makes importing paleozoic._runtime_onednn raise `errors` in turn, then return a
    stand-in module; returns the list of names tried."""
    real = importlib.import_module
    tried: list[str] = []
    queue = list(errors)

    def fake(name: str, *args: object) -> object:
        if name != "paleozoic._runtime_onednn":
            return real(name, *args)
        tried.append(name)
        if queue:
            raise queue.pop(0)
        return sys.modules[__name__]

    monkeypatch.setattr(importlib, "import_module", fake)
    return tried


def test_unbuilt_onednn_module_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    unbuilt = ModuleNotFoundError("no module", name="paleozoic._runtime_onednn")
    _failing_import(monkeypatch, unbuilt, unbuilt)
    with pytest.raises(BuildError, match=r"not built.*Linux x86-64.*"
                                         r"pip install 'paleozoic\[onednn\]'"):
        sdk.runtime_module("onednn")
    assert not sdk.sdk_available("onednn")
    assert sdk.sdk_available("mock")


def test_missing_onednn_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build without the extra has the module but not libdnnl.so.3: the error says what
    to install, no rebuild needed."""
    missing = ImportError("libdnnl.so.3: cannot open shared object file")
    _failing_import(monkeypatch, missing, missing)
    monkeypatch.setattr(onednn_wheel, "wheel_file", lambda wheel, name: None)
    with pytest.raises(BuildError, match=r"libdnnl\.so\.3.*onednn-cpu-gomp.*"
                                         r"pip install 'paleozoic\[onednn\]'") as caught:
        sdk.runtime_module("onednn")
    assert "reinstall" not in str(caught.value)
    assert not sdk.sdk_available("onednn")


def test_onednn_library_elsewhere_is_preloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install scheme that puts the wheel's library out of the module's RUNPATH: the
    library named by the wheel's RECORD is loaded first, then the module again."""
    tried = _failing_import(monkeypatch, ImportError("libdnnl.so.3: cannot open shared object"))
    loaded: list[str] = []
    monkeypatch.setattr(onednn_wheel, "wheel_file", lambda wheel, name: Path(f"/env/{name}"))
    monkeypatch.setattr(sdk.ctypes, "CDLL", lambda path, mode: loaded.append(path))
    assert sdk.runtime_module("onednn") is sys.modules[__name__]
    assert loaded == ["/env/libdnnl.so.3"] and len(tried) == 2

    _failing_import(monkeypatch, ImportError("libdnnl.so.3"), ImportError("undefined symbol"))
    with pytest.raises(BuildError, match=r"does not load with /env/libdnnl.so.3: undefined "
                                         r"symbol.*--force-reinstall"):
        sdk.runtime_module("onednn")


def _fake_wheels(env: Path) -> Path:
    """A Python environment at `env` with the two oneDNN wheels' dist-info (RECORD paths
    relative to site-packages, as pip writes the wheels' data files); returns its
    site-packages."""
    site = env / "lib" / "python3" / "site-packages"
    for wheel, files in ((onednn_wheel.RUNTIME_WHEEL, ["lib/libdnnl.so.3"]),
                         (onednn_wheel.DEVEL_WHEEL, ["lib/cmake/dnnl/dnnl-config.cmake",
                                                     "include/dnnl.h"])):
        info = site / f"{wheel.replace('-', '_')}-2023.2.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {wheel}\n"
                                       "Version: 2023.2.0\n")
        (info / "RECORD").write_text("".join(f"../../../{file},,\n" for file in files))
        for file in files:
            (env / file).parent.mkdir(parents=True, exist_ok=True)
            (env / file).write_text("")
    return site


def test_wheel_files_are_found_through_their_record(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / "env"
    site = _fake_wheels(env)
    monkeypatch.syspath_prepend(str(site))
    library = onednn_wheel.wheel_file(onednn_wheel.RUNTIME_WHEEL, "libdnnl.so.3")
    assert library == (env / "lib" / "libdnnl.so.3").resolve()
    assert sdk.sdk_cmake_defines("onednn") == [f"-Ddnnl_DIR={(env / 'lib/cmake/dnnl').resolve()}"]
    assert sdk.sdk_cmake_defines("mock") == []
    # Listed but not on disk (a half-removed install), or not installed at all.
    (env / "include" / "dnnl.h").unlink()
    assert onednn_wheel.wheel_file(onednn_wheel.DEVEL_WHEEL, "dnnl.h") is None
    assert onednn_wheel.wheel_file("no-such-wheel-pz", "libdnnl.so.3") is None


def test_cmake_runs_the_lookup_as_a_script(tmp_path: Path) -> None:
    """The top CMakeLists.txt runs paleozoic/onednn_wheel.py by path with the build's
    Python (pip's isolated build environment is on its path there)."""
    env = tmp_path / "env"
    site = _fake_wheels(env)
    script = ROOT / "paleozoic" / "onednn_wheel.py"
    assert "${PROJECT_SOURCE_DIR}/paleozoic/onednn_wheel.py cmake-dir" in \
        (ROOT / "CMakeLists.txt").read_text()
    run = subprocess.run([sys.executable, str(script), "cmake-dir"], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert run.stdout.strip() == str((env / "lib" / "cmake" / "dnnl").resolve())
    bad = subprocess.run([sys.executable, str(script), "headers"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "cmake-dir|library" in bad.stderr


def test_build_requirement_is_the_extras_onednn() -> None:
    """Every build compiles the oneDNN SDK against the devel wheel in [build-system]
    requires; the extra installs the same version to run it, and only where it exists."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    build = {r.name: r for r in map(Requirement, project["build-system"]["requires"])}
    extra = {r.name: r for r in map(Requirement,
                                    project["project"]["optional-dependencies"]["onednn"])}
    devel = build[onednn_wheel.DEVEL_WHEEL]
    assert devel.specifier == extra[onednn_wheel.DEVEL_WHEEL].specifier \
        == extra[onednn_wheel.RUNTIME_WHEEL].specifier
    assert str(devel.specifier).startswith("==")
    for platform, machine, wanted in (("linux", "x86_64", True), ("linux", "aarch64", False),
                                      ("darwin", "x86_64", False), ("win32", "AMD64", False)):
        assert devel.marker is not None and devel.marker.evaluate(
            {"sys_platform": platform, "platform_machine": machine}) is wanted
    assert onednn_wheel.RUNTIME_WHEEL not in build  # only as the devel wheel's dependency


@pytest.mark.skipif(not sdk.sdk_available("onednn"), reason="the oneDNN SDK is not installed")
def test_installed_onednn_sdk_runs_on_the_environments_library(
        tmp_path: Path, small_cnn: onnx.ModelProto) -> None:
    """The module and an emitted session find the oneDNN wheel's library of this environment
    without LD_LIBRARY_PATH, and nothing points into pip's temporary build environment."""
    from paleozoic.pipeline import build_session, compile_model

    module = sdk.runtime_module("onednn")
    library = onednn_wheel.wheel_file(onednn_wheel.RUNTIME_WHEEL, "libdnnl.so.3")
    maps = Path("/proc/self/maps")
    if library is not None and maps.is_file():
        loaded = {Path(line.split()[-1]).resolve() for line in maps.read_text().splitlines()
                  if "libdnnl.so" in line}
        assert loaded == {library}, f"{module.__file__} runs on {loaded}, not {library}"
    readelf = shutil.which("readelf")
    if readelf is not None:
        dynamic = subprocess.run([readelf, "-d", module.__file__], capture_output=True,
                                 text=True, check=True).stdout
        assert "pip-build-env" not in dynamic and "RUNPATH" in dynamic
    out = tmp_path / "out"
    compile_model(small_cnn, out, plan="fuse-all")
    exe = build_session(out, sdk="onednn")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    run = subprocess.run([str(exe), "-w", str(out / "weights.bin")], capture_output=True,
                         text=True, env=env, cwd=out)
    assert run.returncode == 0, run.stderr
    assert "total device time" in run.stdout


def test_tune_sdk_needs_measured_costs(tmp_path: Path, small_cnn_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tune", str(small_cnn_path), "-o", str(tmp_path / "plan.json"),
                 "--sdk", "onednn"])
    assert code != 0
    assert "needs --cost measured" in capsys.readouterr().err
    assert not (tmp_path / "plan.json").exists()
