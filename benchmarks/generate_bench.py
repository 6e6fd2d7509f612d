"""Generation loops of KV-cache decoders (`paleozoic compile --generate`) beside
onnxruntime's: for each model, the greedy tokens of a seeded prompt compared token for token
with onnxruntime's generation with a growing cache, and the time to first token and tokens
per second of both, measured in the same run (median of --repeat runs each).

    python benchmarks/generate_bench.py /work/exported/families/gpt2_kv_op17.onnx \\
        /work/exported/families/llama_kv_op17.onnx [--sdk mock,onednn] [--new-tokens 64]

Without model arguments it uses the test decoder (paleozoic_testing.decoder). Prints a
markdown table; --json writes the figures."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from paleozoic.codegen.generate import compile_generator
from paleozoic.pipeline import build_session
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.decoder import greedy_reference, tiny_decoder


def onnxruntime_timing(path: str, prompt: list[int], new_tokens: int) -> tuple[float, float]:
    """(time to first token ms, decode tokens/s) of onnxruntime's greedy generation."""
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    past = {n: np.zeros((1, inputs[n].shape[1], 0, inputs[n].shape[3]), np.float32)
            for n in inputs if n.startswith("past")}
    ids, positions, total = np.array([prompt], np.int64), np.arange(len(prompt))[None], \
        len(prompt)
    start = time.perf_counter()
    first_ms = 0.0
    for step in range(new_tokens):
        out = dict(zip(names, session.run(None, {
            "input_ids": ids, "attention_mask": np.ones((1, total), np.int64),
            "position_ids": positions, **past})))
        token = int(np.argmax(out["logits"][0, -1]))
        if step == 0:
            first_ms = (time.perf_counter() - start) * 1e3
            start = time.perf_counter()
        past = {n: out[n.replace("past", "present", 1)] for n in past}
        ids, positions = np.array([[token]], np.int64), np.array([[total]], np.int64)
        total += 1
    decode_s = time.perf_counter() - start
    return first_ms, (new_tokens - 1) / decode_s


def ours(exe: Path, weights: Path, prompt: list[int], new_tokens: int
         ) -> tuple[list[int], float, float, float, float]:
    """(tokens, time to first token ms, tokens/s, device prefill ms, device ms a token)."""
    result = subprocess.run([str(exe), "-w", str(weights), "-t", ",".join(map(str, prompt)),
                             "-n", str(new_tokens)], capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    timing, device = lines[1].split(), lines[2].split()
    return ([int(t) for t in lines[0].split()], float(timing[4]),
            float(timing[-2].lstrip("(")), float(device[3]), float(device[6]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="KV-cache decoder .onnx files")
    parser.add_argument("--sdk", default="mock,onednn")
    parser.add_argument("--prompt-length", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pz-generate-"))
    models = [Path(m) for m in args.models]
    if not models:
        models = [work / "tiny_decoder.onnx"]
        onnx.save(tiny_decoder(), str(models[0]))
    rows, figures = [], []
    for path in models:
        vocab = onnx.load(str(path), load_external_data=False).graph.output[0] \
            .type.tensor_type.shape.dim[-1].dim_value
        prompt = [int(t) for t in np.random.default_rng(0).integers(
            0, vocab, args.prompt_length)]
        want = greedy_reference(str(path), prompt, args.new_tokens)
        ort_runs = [onnxruntime_timing(str(path), prompt, args.new_tokens)
                    for _ in range(args.repeat)]
        ort_first = statistics.median(r[0] for r in ort_runs)
        ort_rate = statistics.median(r[1] for r in ort_runs)
        out = compile_generator(path, work / path.stem, args.prompt_length,
                                args.prompt_length + args.new_tokens, plan="fuse-all",
                                force=True)
        for sdk in [s for s in args.sdk.split(",") if sdk_available(s)]:
            exe = build_session(out, sdk=sdk)
            runs = [ours(exe, out / "weights.bin", prompt, args.new_tokens)
                    for _ in range(args.repeat)]
            tokens = runs[0][0]
            same = sum(a == b for a, b in zip(tokens, want))
            first = statistics.median(r[1] for r in runs)
            rate = statistics.median(r[2] for r in runs)
            figures.append(dict(model=path.stem, sdk=sdk, equal_tokens=same,
                                new_tokens=args.new_tokens, distinct=len(set(want)),
                                first_ms=first, tokens_per_s=rate, ort_first_ms=ort_first,
                                ort_tokens_per_s=ort_rate, device_prefill_ms=runs[0][3],
                                device_token_ms=runs[0][4]))
            rows.append(f"| {path.stem} | {sdk} | {same}/{args.new_tokens} "
                        f"({len(set(want))} distinct) | {first:.2f} | {ort_first:.2f} | "
                        f"{rate:.0f} | {ort_rate:.0f} | {runs[0][3]:.3f} | "
                        f"{runs[0][4]:.3f} |")
    print(f"prompt {args.prompt_length} tokens, {args.new_tokens} new, greedy, plan fuse-all, "
          f"median of {args.repeat}\n")
    print("| model | SDK | tokens equal to onnxruntime | first token ms | ort ms | tokens/s "
          "| ort tokens/s | device prefill ms | device ms/token |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(f["equal_tokens"] == f["new_tokens"] for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
