"""The main job end to end: ONNX -> LayerQueue -> passes -> plan -> emitted session,
plus building it with cmake/g++ and verifying it against onnxruntime."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from paleozoic.calibration.file import CalibrationError, load_calibration
from paleozoic.calibration.params import LayerQuantization, layer_quantization
from paleozoic.codegen import write_session
from paleozoic.errors import (
    BuildError, DeviceMemoryError, OutputExistsError, PlanMismatchError, SessionRunError,
)
from paleozoic.frontend import import_onnx
from paleozoic.ir import LayerQueue, Model, Plan, PlanError
from paleozoic.ir.plan import Precision, with_data_parallelism
from paleozoic.ops import KINDS
from paleozoic.optimize import BUILTIN_PLANS, fusible_kinds
from paleozoic.passes import run_passes
from paleozoic.runner.sdk import omp_environment

logger = logging.getLogger(__name__)


def load_queue(model: str | Path | onnx.ModelProto,
               input_shapes: Mapping[str, tuple[int, ...]] | None = None,
               batch: int | None = None,
               input_values: Mapping[str, np.ndarray] | None = None,
               outputs: Sequence[str] | None = None) -> LayerQueue:
    return run_passes(import_onnx(model, input_shapes, batch, input_values, outputs))


def resolve_plan(queue: LayerQueue, plan: str | Path | Plan) -> Plan:
    if isinstance(plan, Plan):
        result = plan
    elif str(plan) in BUILTIN_PLANS:
        result = BUILTIN_PLANS[str(plan)](queue)
    else:
        path = Path(plan)
        if not path.is_file():
            raise PlanMismatchError(
                f"{plan}: neither a built-in plan ({', '.join(BUILTIN_PLANS)}) nor a plan "
                f"file")
        try:
            result = Plan.load(path)
        except PlanError as err:
            raise PlanMismatchError(str(err)) from None
    try:
        result.validate(queue, fusible_kinds())
    except PlanError as err:
        raise PlanMismatchError(f"plan does not fit {queue.source}: {err}") from None
    return result


def with_precision(plan: Plan, precision: Precision) -> Plan:
    """The plan with every block at `precision` (per-layer overrides kept)."""
    blocks = [dataclasses.replace(block, precision=precision) for block in plan.blocks]
    return dataclasses.replace(plan, blocks=blocks)


def quantization_for(queue: LayerQueue, plan: Plan, calibration: str | Path | None
                     ) -> dict[str, LayerQuantization]:
    """The int8 parameters of the calibration file, or an error when the plan computes a
    layer with an int8 mode in int8 and there is no file."""
    if calibration is not None:
        return layer_quantization(queue, load_calibration(calibration, queue), str(calibration))
    kinds = {layer.name: layer.kind for layer in queue.layers}
    for block in plan.blocks:
        for name in block.layers:
            if block.precision_of(name) is Precision.INT8 and KINDS[kinds[name]].int8_mode:
                raise CalibrationError(
                    f"block {block.name!r} computes layer {name!r} in int8, which needs "
                    f"quantisation parameters: make them with `paleozoic calibrate "
                    f"{queue.source} --data YOUR_INPUTS -o calib.json` and pass "
                    f"--calibration calib.json (fp16 needs none)")
    return {}


def _session_title(queue: LayerQueue) -> str:
    stem = Path(queue.source).stem or "model"
    return f"{stem} inference session"


def compile_model(model: str | Path | onnx.ModelProto, out: str | Path,
                  plan: str | Path | Plan = "per-layer", force: bool = False,
                  emit: str = "wrapper",
                  input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                  batch: int | None = None, precision: str | Precision | None = None,
                  calibration: str | Path | None = None,
                  input_values: Mapping[str, np.ndarray] | None = None,
                  outputs: Sequence[str] | None = None,
                  profile: str | Path | None = None,
                  data_parallelism: int | None = None) -> Path:
    """Emits the session into `out`: over the runtime wrapper (emit="wrapper") or as
    direct CNML/CNRT calls (emit="raw", same SDK calls and outputs, for comparison).
    Refuses a plan whose weights and arena do not fit the memory of the device `profile`
    (default: the bundled MLU-100's). Nothing is left behind if anything fails: files are
    written into a temporary folder next to `out` and renamed into place at the end."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise OutputExistsError(f"{out}: exists and is not empty; choose another folder or "
                                f"pass --force to replace it")
    queue = load_queue(model, input_shapes, batch, input_values, outputs)
    chosen = resolve_plan(queue, plan)
    if precision is not None:
        chosen = with_precision(chosen, Precision(precision))
    if data_parallelism is not None:
        chosen = with_data_parallelism(chosen, data_parallelism)
    quantization = quantization_for(queue, chosen, calibration)
    ir_model = Model.build(queue, chosen, quantization)
    check_device_memory(ir_model, profile)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        write_session(ir_model, staging, _session_title(queue), emit=emit)
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(retired / "old")
            staging.rename(out)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def device_memory_bytes(profile: str | Path | None = None) -> int:
    """The device memory (dram_bytes) of a device profile file, or of the bundled one."""
    from paleozoic.runner.sdk import runtime_module

    rt = runtime_module()
    # The mock holds one profile per process: read this one's and put the default back,
    # as the device-model oracle sets its own before every query.
    if profile is None:
        rt.reset_device_profile()
    else:
        rt.set_device_profile(str(profile))
    try:
        return int(rt.device_profile()["dram_bytes"])
    finally:
        rt.reset_device_profile()


def check_device_memory(model: Model, profile: str | Path | None = None) -> None:
    """Raises DeviceMemoryError when the session's weights (in each block's precision) and
    its arena exceed the device profile's memory."""
    from paleozoic.ir.memory import plan_memory

    memory = plan_memory(model)
    available = device_memory_bytes(profile)
    if memory.device_bytes > available:
        where = profile or "the bundled MLU-100 profile"
        raise DeviceMemoryError(
            f"the session needs {memory.device_bytes / 1e6:.1f} MB of device memory (weights "
            f"{memory.device_weights_bytes / 1e6:.1f} MB, activation arena "
            f"{memory.arena_bytes / 1e6:.1f} MB) but {where} has {available / 1e6:.1f} MB "
            f"(dram_bytes); compile with --precision fp16 or int8, a smaller batch or input "
            f"shape, or for a device with more memory (--profile)")


def runtime_prefix() -> Path:
    """Install prefix of the C++ runtime (for CMAKE_PREFIX_PATH)."""
    from paleozoic.runner.sdk import runtime_module

    prefix = Path(runtime_module().__file__).resolve().parent / "runtime"
    if not (prefix / "lib" / "cmake" / "PaleozoicRuntime").is_dir():
        raise BuildError(f"the C++ runtime is not installed at {prefix}; reinstall "
                         f"paleozoic with `pip install .`")
    return prefix


def build_session(out: str | Path, jobs: int | None = None, sdk: str | None = None) -> Path:
    """Configures and builds OUT/build with cmake and g++ against `sdk` (paleozoic.runner.sdk; by
    default the one OUT was last built for, else the mock); returns the executable."""
    from paleozoic.runner.sdk import built_sdk, remember_sdk, runtime_module, sdk_cmake_defines

    out = Path(out)
    if not (out / "CMakeLists.txt").is_file():
        raise BuildError(f"{out}: no CMakeLists.txt; run `paleozoic compile` first")
    sdk = sdk or built_sdk(out)
    runtime_module(sdk)  # a clear error when that SDK was not built
    build = out / "build"
    configure = ["cmake", "-S", str(out), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_PREFIX_PATH={runtime_prefix()}", f"-DPALEOZOIC_SDK={sdk}",
                 *sdk_cmake_defines(sdk)]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"] if not (build / "CMakeCache.txt").exists() else []
    compile_ = ["cmake", "--build", str(build), "--parallel", str(jobs or os.cpu_count() or 1)]
    for command in (configure, compile_):
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"{out}: `{' '.join(command)}` failed:\n"
                             f"{_build_log_excerpt(result.stdout + result.stderr)}")
    remember_sdk(out, sdk)
    return build / ("generate" if (out / "generate.cpp").is_file() else "session")


def _build_log_excerpt(log: str, limit: int = 6000) -> str:
    """The compiler's first errors (where a hand edit went wrong; g++'s candidate notes
    after them can run to pages) and the end of the log."""
    if len(log) <= limit:
        return log
    lines = log.splitlines()
    first = [i for i, line in enumerate(lines) if "error" in line.lower()][:5]
    head = "\n".join(dict.fromkeys(line for i in first for line in lines[i:i + 3]))
    return f"first errors:\n{head[:limit // 2]}\n...\n{log[-(limit // 2):]}"


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    report: str


def run_session(out: str | Path, feeds: list[np.ndarray], repeat: int = 1,
                sessions: int = 1) -> RunResult:
    """Runs the built session on `feeds` (in input order); returns outputs and its report.
    sessions > 1 also runs that many sessions at once over its compiled blocks (`-s`), each
    checked against the serial run bit for bit by the session itself."""
    out = Path(out).resolve()
    exe = out / "build" / "session"
    if not exe.is_file():
        exe = build_session(out)
    with tempfile.TemporaryDirectory(prefix="pz-run-") as tmp:
        tmpdir = Path(tmp)
        command = [str(exe), "-w", str(out / "weights.bin"), "-o", str(tmpdir), "-r",
                   str(repeat), *(["-s", str(sessions)] if sessions > 1 else [])]
        manifest = json.loads((out / "session.json").read_text())
        for i, value in enumerate(feeds):
            path = tmpdir / f"input{i}.bin"
            # An integer input's file holds its own type (session.h); float32 otherwise.
            dtype = manifest["inputs"][i].get("dtype", "float32") \
                if i < len(manifest["inputs"]) else "float32"
            np.ascontiguousarray(value, dtype=np.dtype(dtype).newbyteorder("<")).tofile(path)
            command += ["-i", str(path)]
        result = subprocess.run(command, capture_output=True, text=True,
                                env=omp_environment())
        if result.returncode != 0:
            raise SessionRunError(f"{exe} failed (exit {result.returncode}):\n{result.stderr}")
        # Integer outputs (ArgMax's indices) are written as int64.
        outputs = [np.fromfile(tmpdir / f"{o['name']}.bin",
                               dtype="<f4" if o.get("dtype", "float32") == "float32" else "<i8"
                               ).reshape(o["shape"]) for o in manifest["outputs"]]
    return RunResult(outputs, result.stdout)
