"""Hand-edit mistakes in an emitted session.cpp, made the way a person would make them in an
editor, rebuilt with cmake/g++ and run: each is refused at run time (exit 1) with a message
naming the layer or block and, where the SDK is the one that refuses, its status code."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import onnx
import pytest

from paleozoic.errors import BuildError
from paleozoic.pipeline import build_session, compile_model


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
            ) -> dict[str, Path]:
    """small_cnn emitted under fuse-all and per-layer (compiled once for the module)."""
    small_cnn: onnx.ModelProto = request.getfixturevalue("small_cnn")
    root = tmp_path_factory.mktemp("hand_edits")
    return {plan: compile_model(small_cnn, root / plan, plan=plan)
            for plan in ("fuse-all", "per-layer")}


@pytest.fixture(scope="module")
def small_cnn() -> onnx.ModelProto:  # module scope for `emitted` (the conftest one is per test)
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "paleozoic_tests_root_conftest", Path(__file__).parents[1] / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.small_cnn.__wrapped__()


# The emitted loop compiling the blocks (each then frees its host copies of the weights).
COMPILE_LOOP = (r"^(  for \(pz::Block& block : blocks\) \{\n    block\.compile\(\);\n"
                r"    block\.releaseHostWeights\(\);.*\n  \})")


def edit(emitted: dict[str, Path], plan: str, dest: Path,
         *substitutions: tuple[str, str]) -> Path:
    """Copies the emitted folder and applies regex substitutions to session.cpp; each must
    match exactly once (so a change in the emitted text fails here, not silently)."""
    out = dest / f"edited-{plan}"
    shutil.copytree(emitted[plan], out)
    path = out / "session.cpp"
    text = path.read_text()
    for pattern, replacement in substitutions:
        text, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
        assert count == 1, f"pattern {pattern!r} matched {count} times in session.cpp"
    path.write_text(text)
    return out


def run_edited(out: Path) -> subprocess.CompletedProcess[str]:
    exe = build_session(out, jobs=1)
    return subprocess.run([str(exe), "-w", str(out / "weights.bin"), "-o", str(out)],
                          capture_output=True, text=True, cwd=out)


def assert_refused(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.startswith("session: ")
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.mark.parametrize("plan", ["fuse-all", "per-layer"])
@pytest.mark.parametrize("mp", [0, 33])
def test_mp_out_of_range(emitted, tmp_path, plan, mp):
    out = edit(emitted, plan, tmp_path,
               (r"(constexpr pz::BlockKnobs kBlock0\{\w+, )\d+,", rf"\g<1>{mp},"))
    result = run_edited(out)
    # fused: the block is named; per-layer: the block's (only) layer
    where = "block0: cnmlCompileFusionOp" if plan == "fuse-all" else "conv1: cnmlCompileBaseOp"
    assert_refused(result, where, "failed with CNML_STATUS_INVALIDPARAM (8)",
                   f"mp {mp} is outside 1..32")
    assert not (out / "softmax.bin").exists()


def test_layer_fused_into_two_blocks(emitted, tmp_path):
    # a second block that also claims `fc`, pasted before the compile loop
    out = edit(emitted, "fuse-all", tmp_path, (
        COMPILE_LOOP,
        '  blocks.emplace_back("block1", true, 4, std::vector<pz::Layer*>{&fc, &softmax});\n'
        r"\1"))
    assert_refused(run_edited(out),
                   "fc: already fused into block block0", "cannot join block block1")


def test_compile_a_block_twice(emitted, tmp_path):
    out = edit(emitted, "fuse-all", tmp_path, (
        COMPILE_LOOP,
        r"\1\n  blocks[0].compile();"))
    assert_refused(run_edited(out), "block block0: compile called twice")


def test_compile_a_fused_layer_alone_after_compile(emitted, tmp_path):
    out = edit(emitted, "fuse-all", tmp_path, (
        COMPILE_LOOP,
        r"\1\n  conv2.compileOp(4);"))
    assert_refused(run_edited(out), "conv2: cannot compile alone", "fused into block block0")


def test_fuse_a_layer_after_compiling_it(emitted, tmp_path):
    # per-layer session: compile conv1 alone first, then the blocks fuse it
    out = edit(emitted, "per-layer", tmp_path,
               (r"^(  std::vector<pz::Block> blocks;)",
                r"  conv1.compileOp(4);\n\1"),
               (r'blocks\.emplace_back\("block0", kBlock0,',
                'blocks.emplace_back("block0", pz::BlockKnobs{true, 1},'),
               (r"(std::vector<pz::Layer\*>\{\s*&conv1)\}\);", r"\1, &bn1});"),
               (r'^  blocks\.emplace_back\("block1".*\n', ""))
    assert_refused(run_edited(out), "conv1: already compiled alone",
                   "cannot be fused into block block0")


def test_compile_a_layer_twice(emitted, tmp_path):
    out = edit(emitted, "per-layer", tmp_path, (
        COMPILE_LOOP,
        r"\1\n  conv1.compileOp(8);"))
    assert_refused(run_edited(out), "conv1: compileOp called twice")


@pytest.mark.parametrize("plan", ["fuse-all", "per-layer"])
def test_run_before_compile(emitted, tmp_path, plan):
    # the run moved above the compile loop
    out = edit(emitted, plan, tmp_path, (
        COMPILE_LOOP,
        r"  pz::runBlocks(blocks, device.queue());\n\1"))
    assert_refused(run_edited(out), "block block0: run before compile")


def test_add_of_mismatched_shapes(emitted, tmp_path):
    # the residual Add fed the pre-pool activation ([1, 8, 16, 16]) instead of the pooled one
    out = edit(emitted, "fuse-all", tmp_path, (
        r'(pz::AddLayer residual\{"residual", conv2\.output\(\), )pool1(\.output\(\)\})',
        r"\1relu1\2"))
    assert_refused(run_edited(out), "residual", "[1, 8, 8, 8]", "[1, 8, 16, 16]")


def test_layer_fed_a_tensor_of_the_wrong_rank(emitted, tmp_path):
    # the fully-connected layer fed the 4-D activation before global pooling
    out = edit(emitted, "fuse-all", tmp_path, (
        r'(pz::FullyConnectedLayer fc\{"fc", )gap(\.output\(\), 10\})', r"\1residual\2"))
    assert_refused(run_edited(out), "fc: weight 'fc.weight'", "[10, 8] (80 values)",
                   "[10, 512] (5120 values)")


def test_conv_kernel_edited_without_its_weights(emitted, tmp_path):
    # the kernel changed from 3x3 to 5x5 but the weights line left alone
    out = edit(emitted, "fuse-all", tmp_path, (
        r'(pz::ConvLayer conv2\{"conv2", pool1\.output\(\), pz::Conv\{8, )\{3, 3\}',
        r"\1{5, 5}"))
    assert_refused(run_edited(out), "conv2: weight 'conv2.weight'", "[8, 8, 3, 3] (576 values)",
                   "[8, 8, 5, 5] (1600 values)")


def test_weights_shape_edited(emitted, tmp_path):
    out = edit(emitted, "fuse-all", tmp_path, (
        r'weights\.get\("conv1\.weight", \{8, 3, 3, 3\}\)',
        'weights.get("conv1.weight", {8, 3, 5, 5})'))
    assert_refused(run_edited(out), "tensor 'conv1.weight'", "[8, 3, 3, 3]", "[8, 3, 5, 5]")


def test_edit_that_does_not_compile_is_a_build_error(emitted, tmp_path):
    # a typo in a layer name: g++ refuses it, build_session reports the file and the error
    out = edit(emitted, "fuse-all", tmp_path, (r"&residual,", "&residuall,"))
    with pytest.raises(BuildError, match="residuall"):
        build_session(out, jobs=1)
