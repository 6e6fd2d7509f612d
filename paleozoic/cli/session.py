"""The `paleozoic` commands around one session: compile (and its generation-loop variant,
compile --generate), build, verify, inspect, prune, and prefix, the runtime's CMake prefix
that sessions build against. Each handler takes the parsed arguments and returns the exit
code; the library is imported inside them, so `paleozoic --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from paleozoic.cli.args import (
    add_shape_options, mb, new_output, positive_int, precision_names, shapes)
from paleozoic.codegen.escape import terminal_text
from paleozoic.errors import ModelLoadError
from paleozoic.runner.sdk import SDKS


def _cmd_compile(args: argparse.Namespace) -> int:
    from paleozoic import api

    if args.generate:
        return _compile_generator(args)
    out = api.compile(args.model, args.output, plan=args.plan, force=args.force,
                      emit=args.emit, precision=args.precision, calibration=args.calibration,
                      profile=args.profile, data_parallelism=args.data_parallelism,
                      **shapes(args))
    print(f"wrote {out}/ (session.cpp, weights.bin, CMakeLists.txt, plan.json, session.json)")
    memory = json.loads((Path(out) / "session.json").read_text()).get("memory")
    if memory:
        print(f"memory: weights {mb(memory['weights_bytes'])}, arena "
              f"{mb(memory['arena_bytes'])} (lower bound {mb(memory['lower_bound_bytes'])}, "
              f"{len(memory['tensors'])} tensors; session.json \"memory\"); device "
              f"{mb(memory['device_bytes'])} with weights in the plan's precisions")
    return 0


def _compile_generator(args: argparse.Namespace) -> int:
    from paleozoic.codegen.generate import compile_generator

    problem = next((f"--generate does not take {flag}: the loop fixes the shapes from "
                    f"--prompt-length and --max-length" for flag, value in (
                        ("--emit raw", args.emit == "raw"), ("--calibration", args.calibration),
                        ("--input-shape", args.input_shape), ("--batch", args.batch),
                        ("--data-parallelism", args.data_parallelism)) if value),
                   None)
    if problem is None and not 1 <= args.prompt_length < args.max_length:
        problem = (f"--prompt-length {args.prompt_length} must be at least 1 and below "
                   f"--max-length {args.max_length}")
    if problem:
        print(f"paleozoic compile: error: {problem}", file=sys.stderr)
        return 2
    out = compile_generator(args.model, args.output, prompt_length=args.prompt_length,
                            max_length=args.max_length, plan=args.plan,
                            precision=args.precision, force=args.force)
    print(f"wrote {out}/ (generate.cpp, weights.bin, CMakeLists.txt, generate.json)")
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from paleozoic import api
    from paleozoic.runner.sdk import built_sdk

    exe = api.build(args.output, sdk=args.sdk)
    print(f"built {exe} (SDK: {built_sdk(args.output)})")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from paleozoic import api
    from paleozoic.accuracy.verify import ATOL, FP32_FLOOR, RTOL, TRUTH_FACTOR, load_input_files

    out = Path(args.output)
    if not (out / "session.json").is_file():
        raise ModelLoadError(f"{out}: no session.json; run `paleozoic compile` first")
    inputs = None
    if args.input:
        manifest = json.loads((out / "session.json").read_text())
        inputs = load_input_files(args.input, {i["onnx_name"]: tuple(i["shape"])
                                               for i in manifest["inputs"]},
                                  {i["onnx_name"]: i.get("dtype", "float32")
                                   for i in manifest["inputs"]})
    report = api.verify(out, model=args.model, inputs=inputs, seed=args.seed,
                        distribution=args.distribution, float64=args.float64,
                        sessions=args.sessions)
    # Layers off the SDK library's fast kernels always show; the whole list with -v.
    if args.verbose or "slow paths" in report.kernels:
        for line in report.kernels.rstrip().splitlines():
            print(terminal_text(line))
    print(f"inputs: {report.inputs}")
    print(f"{'output':<28} {'shape':<20} {'max abs err':>12} {'max rel err':>12} "
          f"{'cosine':>10} {'SQNR dB':>8} {'top-1':>6}  result")
    for c in report.checks:
        result = "pass" if c.passed else "FAIL"
        if c.note:
            result += f" ({c.note})"
        top1 = "" if c.top1 is None else f"{c.top1:.0%}"
        print(f"{terminal_text(c.name):<28} {str(list(c.shape)):<20} {c.max_abs:>12.3e} "
              f"{c.max_rel:>12.3e} "
              f"{c.cosine:>10.7f} {c.sqnr_db:>8.1f} {top1:>6}  {result}")
    if report.concurrent:
        print(terminal_text(report.concurrent))
    if report.float64 == "run":
        print("against the float64 truth (max error / max |truth|):")
        for c in report.checks:
            print(f"  {terminal_text(c.name):<26} paleozoic {c.truth_error:.3e}   onnxruntime "
                  f"{c.ort_truth_error:.3e} (optimised) {c.ort_plain_truth_error:.3e} "
                  f"(unoptimised)")
    elif report.float64.startswith("unavailable"):
        print(f"float64 reference {report.float64}")
    if args.json:
        Path(args.json).write_text(report.to_json())
    if any(c.rule == "runtime" for c in report.checks):
        print(f"{'PASS' if report.passed else 'FAIL'}: reduced-precision session identical "
              f"to the runtime's run of its plan (accuracy reported, not judged: see "
              f"`paleozoic debug`)")
    else:
        print(f"{'PASS' if report.passed else 'FAIL'}: session vs onnxruntime (rtol {RTOL}, "
              f"atol {ATOL}), else error against float64 within {TRUTH_FACTOR:g}x "
              f"onnxruntime's or {FP32_FLOOR:.1e} of the largest value")
    return 0 if report.passed else 1


def _cmd_inspect(args: argparse.Namespace) -> int:
    import numpy as np

    from paleozoic.ops.sparsity import sparse_refusal, sparsity_of
    from paleozoic.ir import Model
    from paleozoic.ir.memory import plan_memory
    from paleozoic.ops import KINDS
    from paleozoic.pipeline import load_queue, resolve_plan

    queue = load_queue(args.model, **shapes(args))

    def zeros(layer) -> str:
        # How sparse a pruned model's filters are (`paleozoic prune`, or torch.ao.pruning,
        # whose exports are dense tensors with zeros): all zeros, then zero output-channel
        # pairs, what the SDK's sparse mode skips.
        if "weight" not in layer.weights:
            return ""
        kind = KINDS[layer.kind]
        sparsity = sparsity_of(queue.weights[layer.weights["weight"]], kind.weight_channel_axis)
        if sparse_refusal(layer):
            return f"{sparsity.zeros:.0%}"
        return f"{sparsity.zeros:.0%} ({sparsity.pairs:.0%})"

    rows = []
    total_macs = total_params = 0
    for layer in queue.layers:
        kind = KINDS[layer.kind]
        ins = [queue.shape(name) for name in layer.inputs]
        out = queue.shape(layer.output)
        macs = kind.macs(layer.op.attrs, ins, out)
        params = sum(int(queue.weights[w].size) for w in layer.weights.values())
        total_macs += macs
        total_params += params
        out_bytes = int(np.prod(out)) * np.dtype(queue.tensors[layer.output].dtype).itemsize
        rows.append((layer.name, layer.kind, " ".join(str(list(s)) for s in ins),
                     str(list(out)), f"{out_bytes:,}", f"{macs:,}", f"{params:,}",
                     zeros(layer)))
    headers = ("layer", "kind", "inputs", "output", "output bytes", "MACs", "params",
               "zeros (pairs)")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    print(f"{len(queue.layers)} layers, {total_macs:,} MACs, {total_params:,} parameters")
    for plan in ("per-layer", "fuse-all"):
        memory = plan_memory(Model.build(queue, resolve_plan(queue, plan)))
        print(f"memory under {plan}: weights {mb(memory.weights_bytes)}, arena "
              f"{mb(memory.arena_bytes)} (lower bound {mb(memory.lower_bound_bytes)})")
    return 0


def _cmd_prune(args: argparse.Namespace) -> int:
    import os
    import tempfile

    import onnx

    from paleozoic.frontend.loader import load_onnx
    from paleozoic.frontend.prune import parse_sparsity, prune

    out = new_output(args.output, args.force)
    default, per_layer = parse_sparsity(args.sparsity)
    loaded = load_onnx(args.model)
    model, report = prune(loaded, default, per_layer, args.pattern)
    # Written beside the target and renamed: an interrupted write leaves no half a model.
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    try:
        onnx.save_model(model, tmp)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"{'layer':<40} {'op':<7} {'asked':>6} {'zeros before':>13} {'zeros after':>12} "
          f"{'zero pairs':>11}")
    for row in report:
        print(f"{row.target.node:<40} {row.target.op_type:<7} {row.sparsity:>6.2f} "
              f"{row.before.zeros:>12.1%} {row.after.zeros:>12.1%} {row.after.pairs:>11.1%}")
    print(f"{len(report)} layer(s) pruned ({args.pattern}); wrote {out}")
    return 0


def _cmd_prefix(args: argparse.Namespace) -> int:
    from paleozoic.pipeline import runtime_prefix

    print(runtime_prefix())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds compile, build, verify, inspect and prune."""
    p = sub.add_parser("compile", help="emit a C++ session from an ONNX model")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--plan", default="per-layer",
                   help="per-layer, fuse-all, or a plan.json (default: per-layer)")
    p.add_argument("--force", action="store_true", help="replace a non-empty output folder")
    p.add_argument("--emit", choices=("wrapper", "raw"), default="wrapper",
                   help="wrapper: the session over the runtime wrapper (default); raw: the "
                        "same session as direct CNML/CNRT calls, for comparison")
    p.add_argument("--precision", choices=precision_names(), default=None,
                   help="what every block computes in (default: the plan's own precisions, "
                        "fp32 for the built-in plans); int8 needs --calibration")
    p.add_argument("--calibration", metavar="CALIB.json",
                   help="a file made by `paleozoic calibrate` for this model: its int8 "
                        "parameters go into weights.bin, so any block may be int8")
    p.add_argument("--data-parallelism", type=int, default=None, metavar="N",
                   help="every forward runs the batch as N groups of frames at once, each on "
                        "its block's MP cores (MLU100 data parallelism); blocks' MPs are "
                        "lowered to 32 / N where above it, and N must divide the batch "
                        "(default: the plan's own, 1 for the built-in plans)")
    p.add_argument("--profile", metavar="FILE",
                   help="device profile whose memory (dram_bytes) the session's weights and "
                        "arena must fit (default: the bundled MLU-100's, 8 GB)")
    p.add_argument("--generate", action="store_true",
                   help="a decoder LM exported with a KV cache (input_ids, attention_mask, "
                        "position_ids, past_* in; logits, present_* out): emit a C++ "
                        "generation loop (generate.cpp) over a prefill and a decode-step "
                        "session instead of one session")
    p.add_argument("--prompt-length", type=int, default=16, metavar="N",
                   help="--generate: tokens the prefill session takes at once (default 16)")
    p.add_argument("--max-length", type=int, default=128, metavar="N",
                   help="--generate: KV cache slots, prompt and new tokens (default 128)")
    add_shape_options(p)
    p.set_defaults(func=_cmd_compile)

    p = sub.add_parser("build", help="build an emitted session with cmake and g++")
    p.add_argument("output", help="folder written by `paleozoic compile`")
    p.add_argument("--sdk", choices=SDKS, default=None,
                   help="SDK to compute with: the CPU mock or oneDNN (needs the onednn "
                        "extra); default: the one OUT was built for before, else mock. "
                        "verify and run use the SDK of the build")
    p.set_defaults(func=_cmd_build)

    p = sub.add_parser("verify", help="run a session on a seeded input, compare with "
                       "onnxruntime (builds it if needed)")
    p.add_argument("output", help="folder written by `paleozoic compile`")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated input")
    p.add_argument("--distribution", choices=("normal", "uniform"), default="normal",
                   help="generated input values: standard normal (default) or uniform "
                        "in [0, 1)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="your own data for input NAME (repeatable), or a folder of "
                        "NAME.npy files; replaces the generated input")
    p.add_argument("--float64", action="store_true",
                   help="also measure every output against a float64 evaluation of the "
                        "model (done anyway where onnxruntime disagrees)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--model", help="the ONNX model (default: the one it was compiled from)")
    p.add_argument("--sessions", type=positive_int, default=1, metavar="N",
                   help="also run N sessions at once over the compiled model, each checked "
                        "against the serial run bit for bit (the session's -s)")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("inspect", help="print the layer queue of a model")
    p.add_argument("model", help="the .onnx file")
    add_shape_options(p)
    p.set_defaults(func=_cmd_inspect)

    p = sub.add_parser("prune", help="zero the smallest weights of convolutions and fully "
                       "connected layers, for the SDK's sparse mode; write a new .onnx")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--sparsity", required=True, metavar="S|LAYER=S,...",
                   help="fraction of weights (pairs) to zero: one value for every layer, "
                        "LAYER=S for one node (by ONNX node name), or both, comma separated")
    p.add_argument("--pattern", choices=["pairs", "unstructured"], default="pairs",
                   help="pairs: output channels 2i and 2i+1 zeroed together at each input "
                        "channel and kernel position, as Cambricon's tools prune for the "
                        "MLU100's sparse mode (default); unstructured: single weights")
    p.add_argument("-o", "--output", required=True, help="the pruned .onnx to write")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.set_defaults(func=_cmd_prune)


def register_prefix(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds prefix, apart from the others: `paleozoic --help` lists commands in the order
    they are added, and prefix has always come last."""
    p = sub.add_parser("prefix", help="print the runtime's CMake prefix (CMAKE_PREFIX_PATH)")
    p.set_defaults(func=_cmd_prefix)
