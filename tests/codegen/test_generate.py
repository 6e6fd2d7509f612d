"""`paleozoic compile --generate`: the emitted generation loop (a prefill and a decode-step
session from one KV-cache decoder, a window of cache slots) built with g++ and run, its
greedy tokens equal to onnxruntime's generation with a growing cache for 64 new tokens, on
both SDKs and for prompts shorter than, equal to and longer than the prefill; seeded top-k
sampling; the refusals and errors that name what to change."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from paleozoic.cli import main
from paleozoic.codegen.generate import compile_generator
from paleozoic.pipeline import build_session
from paleozoic.runner.sdk import sdk_available
from paleozoic_testing.decoder import greedy_reference, tiny_decoder

PROMPTS = {"short": [3, 14, 15], "exact": [3, 14, 15, 9, 26, 5], "long": list(range(7, 63, 6))}


@pytest.fixture(scope="module")
def decoder(tmp_path_factory) -> tuple[onnx.ModelProto, Path]:
    model = tiny_decoder()
    path = tmp_path_factory.mktemp("decoder") / "tiny_decoder.onnx"
    onnx.save(model, str(path))
    return model, path


def _generate(exe: Path, out: Path, prompt: list[int], *flags: str) -> list[int]:
    result = subprocess.run([str(exe), "-t", ",".join(map(str, prompt)), "-w",
                             str(out / "weights.bin"), *flags], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("time to first token: ") and "tokens/s" in lines[1]
    assert lines[2].startswith("device time: prefill ")
    return [int(t) for t in lines[0].split()]


@pytest.mark.parametrize("sdk", [s for s in ("mock", "onednn") if sdk_available(s)])
def test_greedy_tokens_equal_onnxruntime(decoder, sdk: str, tmp_path) -> None:
    model, path = decoder
    out = compile_generator(path, tmp_path / "gen", prompt_length=6, max_length=80,
                            plan="fuse-all" if sdk == "onednn" else "per-layer")
    exe = build_session(out, sdk=sdk)
    for name, prompt in PROMPTS.items():
        want = greedy_reference(model, prompt, 64)
        assert len(set(want)) > 10, "the test model repeats itself; the test would be weak"
        assert _generate(exe, out, prompt, "-n", "64") == want, name


def test_emitted_loop_reads_like_the_sessions(decoder, tmp_path) -> None:
    _, path = decoder
    out = compile_generator(path, tmp_path / "a", prompt_length=6, max_length=80)
    again = compile_generator(path, tmp_path / "b", prompt_length=6, max_length=80)
    source = (out / "generate.cpp").read_text()
    assert source == (again / "generate.cpp").read_text()  # deterministic
    assert (out / "weights.bin").read_bytes() == (again / "weights.bin").read_bytes()
    assert "pz::KvWindow cache{{{1, 2, kWindow, 8}, {1, 2, kWindow, 8}, {1, 2, kWindow, 8}, " \
           "{1, 2, kWindow, 8}}, kWindow};" in source
    assert "constexpr pz::BlockKnobs kPrefillBlock0{" in source
    assert "constexpr pz::BlockKnobs kDecodeBlock0{" in source
    assert "cache.startPrompt(kPromptSlots)" in source and "cache.copyPast(3, " in source


def test_seeded_top_k_sampling(decoder, tmp_path) -> None:
    model, path = decoder
    out = compile_generator(path, tmp_path / "gen", prompt_length=6, max_length=40)
    exe = build_session(out)
    prompt = PROMPTS["short"]
    first = _generate(exe, out, prompt, "-n", "20", "-k", "8", "-T", "1.5", "-s", "7")
    assert first == _generate(exe, out, prompt, "-n", "20", "-k", "8", "-T", "1.5", "-s", "7")
    others = [_generate(exe, out, prompt, "-n", "20", "-k", "8", "-T", "1.5", "-s", str(s))
              for s in (8, 9, 10)]
    assert any(o != first for o in others)
    # Top-1 sampling is greedy decoding.
    assert _generate(exe, out, prompt, "-n", "20", "-k", "1", "-s", "3") == \
        greedy_reference(model, prompt, 20)
    # Tokens beyond the window: an error naming the option to change, nothing generated.
    result = subprocess.run([str(exe), "-t", "1,2,3", "-n", "39", "-w",
                             str(out / "weights.bin")], capture_output=True, text=True)
    assert result.returncode == 1 and "--max-length" in result.stderr


def test_cli_generate_and_its_refusals(decoder, tmp_path, capsys) -> None:
    _, path = decoder
    assert main(["compile", str(path), "-o", str(tmp_path / "gen"), "--generate",
                 "--prompt-length", "4", "--max-length", "32"]) == 0
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == [
        "CMakeLists.txt", "generate.cpp", "generate.json", "weights.bin"]
    assert main(["compile", str(path), "-o", str(tmp_path / "bad"), "--generate",
                 "--prompt-length", "32", "--max-length", "32"]) == 2
    assert "--prompt-length 32 must be at least 1 and below --max-length 32" in \
        capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    plain = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])]),
        opset_imports=[onnx.helper.make_opsetid("", 17)])
    onnx.save(plain, str(tmp_path / "plain.onnx"))
    assert main(["compile", str(tmp_path / "plain.onnx"), "-o", str(tmp_path / "p"),
                 "--generate"]) == 3
    assert "--generate needs one input_ids input" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_decode_weights_shared_with_the_prefill(decoder, tmp_path) -> None:
    from paleozoic.codegen.weights import read_weights

    _, path = decoder
    out = compile_generator(path, tmp_path / "gen", prompt_length=6, max_length=40)
    source = (out / "generate.cpp").read_text()
    used = re.findall(r'weights\.get\("([^"]+)"', source)
    stored = read_weights(out / "weights.bin")
    # Every weight either session reads is in the one file, and a matrix both read is
    # stored once (the decode step reads the prefill's copy).
    assert set(used) == set(stored)
    assert used.count("q0.weight") == 2 and len(stored) < len(used)
    assert not any(name.startswith("decode.") for name in stored)


def test_a_weight_that_differs_between_the_steps_is_kept_apart() -> None:
    """A constant whose value depends on the step's shapes (a causal mask the decode step
    keeps) gets the decode step its own name; equal ones are shared."""
    from types import SimpleNamespace

    from paleozoic.codegen.generate import _shared_weights

    def model(weights: dict, layers: list) -> SimpleNamespace:
        return SimpleNamespace(queue=SimpleNamespace(weights=weights, layers=layers))

    prefill = model({"w": np.ones(3), "mask": np.ones((4, 8))}, [])
    layer = SimpleNamespace(weights={"weight": "w", "constant": "mask"})
    decode = model({"w": np.ones(3), "mask": np.ones((1, 8))}, [layer])
    _shared_weights(prefill, decode)
    assert sorted(decode.queue.weights) == ["decode.mask", "w"]
    assert layer.weights == {"weight": "w", "constant": "decode.mask"}
