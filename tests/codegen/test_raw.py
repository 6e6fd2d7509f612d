"""The raw emission mode (`paleozoic compile --emit raw`): the same session as direct
CNML/CNRT calls. It must build warning-free (-Wall -Wextra -Werror), free what it creates,
and give the same bytes as the wrapper form on the paper's six networks."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import pytest

from paleozoic.cli import main as cli_main
from paleozoic.codegen.emit import session_files, write_session
from paleozoic.codegen.environment import template_dir
from paleozoic.codegen.loc import count_loc
from paleozoic.ir import Model
from paleozoic.pipeline import build_session, load_queue, resolve_plan, run_session
from paleozoic_testing.workloads import build


def test_raw_form_is_deterministic_and_names_handles_after_layers(
        small_cnn: onnx.ModelProto) -> None:
    """Same model and plan, same bytes; handles are named after the layer that made them."""
    queue = load_queue(small_cnn)
    model = Model.build(queue, resolve_plan(queue, "per-layer"))
    first = session_files(model, "t", "raw")[0]["session.cpp"]
    assert session_files(model, "t", "raw")[0]["session.cpp"] == first
    for layer in queue.layers:
        ident = re.sub(r"\W", "_", layer.name)
        assert f"cnmlTensor_t {ident}_out = nullptr" in first, layer.name
        assert re.search(rf"CHECK\(cnmlCreate\w*Op\(&{ident}_op,", first), layer.name
        assert f"cnmlDestroyBaseOp(&{ident}_op)" in first
    assert "0x" not in first  # no pointer values leak into the text


def test_raw_form_refuses_const_data_that_is_no_weight(small_cnn: onnx.ModelProto,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound data that matches none of the layer's weights (and is not zeros) is an error
    naming the layer, not printed as some other weight."""
    from paleozoic import _runtime
    from paleozoic.codegen import raw

    class WrongDigests:
        def __getattr__(self, name: str) -> object:
            return getattr(_runtime, name)

        @staticmethod
        def data_digest(data: np.ndarray) -> str:
            return "0" * 16

    monkeypatch.setattr(raw, "_runtime", lambda: WrongDigests())
    queue = load_queue(small_cnn)
    with pytest.raises(ValueError, match=r"layer '.*': cnmlBindConstData_V2 binds \d+ bytes"):
        session_files(Model.build(queue, resolve_plan(queue, "per-layer")), "t", "raw")


def test_no_raw_templates_per_kind() -> None:
    """The raw form is derived from the wrapper's calls: no template per layer kind."""
    assert not (template_dir() / "raw" / "layers").exists()


def test_count_loc_rule() -> None:
    text = "\n".join([
        "// a comment", "int a = 1;", "", "   // indented comment",
        "  // paleozoic: model loading begin", "load();", "more();",
        "  // paleozoic: model loading end", "int b = 2;  // trailing comment counts", "}",
    ])
    assert count_loc(text) == 3


def test_raw_form_frees_what_it_creates(small_cnn: onnx.ModelProto) -> None:
    queue = load_queue(small_cnn)
    for plan in ("per-layer", "fuse-all"):
        text = session_files(Model.build(queue, resolve_plan(queue, plan)), "t", "raw")[0][
            "session.cpp"]
        assert "pz::Layer" not in text and "pz::Block" not in text
        ops = len(re.findall(r"CHECK\(cnmlCreate\w*Op\(&", text)) - text.count(
            "cnmlCreateFusionOp(")
        assert ops == len(queue.layers) == text.count("cnmlDestroyBaseOp(")
        assert text.count("cnmlCreateTensor_V2(") == text.count("cnmlDestroyTensor(")
        assert text.count("cnrtMalloc(") == text.count("cnrtFree(")
        assert text.count("cnmlCreateFusionOp(") == text.count("cnmlDestroyFusionOp(")
        for kind in ("Conv", "Pool"):
            assert (text.count(f"cnmlCreate{kind}OpParam_V")
                    == text.count(f"cnmlDestroy{kind}OpParam("))


def test_cli_emit_raw(tmp_path: Path, small_cnn_path: Path) -> None:
    out = tmp_path / "raw"
    assert cli_main(["compile", str(small_cnn_path), "-o", str(out), "--emit", "raw"]) == 0
    text = (out / "session.cpp").read_text()
    assert "cnmlCreateConvOp(" in text and "cnmlCompileBaseOp(" in text
    assert "pz::ConvLayer" not in text


def _outputs(model: onnx.ModelProto, tmp_path: Path, plans: list) -> None:
    """Builds both forms of each plan and checks they agree bit for bit (device time too)."""
    queue = load_queue(model)
    rng = np.random.default_rng(0)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feed = rng.standard_normal(shape).astype(np.float32)
    folders = {}
    for index, plan in enumerate(plans):
        ir_model = Model.build(queue, resolve_plan(queue, plan))
        for emit in ("wrapper", "raw"):
            folders[index, emit] = tmp_path / f"plan{index}-{emit}"
            folders[index, emit].mkdir()
            write_session(ir_model, folders[index, emit], "t", emit=emit)
    # g++ spends a build on session.cpp alone, on one core: two builds at a time keep both
    # of a CI machine's busy (-Wall -Wextra -Werror, CMakeLists.txt).
    with ThreadPoolExecutor(max_workers=2) as builds:
        list(builds.map(lambda folder: build_session(folder, jobs=1), folders.values()))
    for index, plan in enumerate(plans):
        results = {emit: run_session(folders[index, emit], [feed]) for emit in ("wrapper", "raw")}
        for ours, raw in zip(results["wrapper"].outputs, results["raw"].outputs):
            assert np.array_equal(ours, raw), f"{plan}: outputs differ"
        device = [re.search(r"total device time: ([\d.]+) us", results[e].report).group(1)
                  for e in ("wrapper", "raw")]
        assert device[0] == device[1], f"{plan}: device time {device}"
        # The per-block lines (the wrapper's report goes on to the kernels it ran on).
        assert (results["wrapper"].report.split("total device time")[0]
                == results["raw"].report.split("total device time")[0]), \
            "per-block report differs"


@pytest.mark.parametrize("network, plans", [
    ("resnet18", ["per-layer", "fuse-all"]),
    # ResNet-50 and VGG-19 repeat ResNet-18's and VGG-16's layers, deeper.
    pytest.param("resnet50", ["per-layer"], marks=pytest.mark.exhaustive),
    pytest.param("vgg16", ["per-layer"], marks=pytest.mark.slow),
    pytest.param("vgg19", ["per-layer"], marks=[pytest.mark.slow, pytest.mark.exhaustive]),
    ("mobilenet_v2", ["per-layer"]),
    ("alexnet", ["per-layer", "fuse-all"]),
])
def test_raw_matches_wrapper_bit_for_bit(network: str, plans: list[str],
                                         tmp_path: Path) -> None:
    _outputs(build(network, seed=0), tmp_path, plans)


def test_raw_matches_wrapper_with_mixed_blocks(small_cnn: onnx.ModelProto,
                                               tmp_path: Path) -> None:
    """Blocks of several layers, fused and not, each on its own MP."""
    from helpers import head_middle_tail_plan

    _outputs(small_cnn, tmp_path, [head_middle_tail_plan(load_queue(small_cnn), 3, 2)])


def test_raw_form_refuses_host_layers_cleanly(tmp_path: Path, capsys) -> None:
    """A model with host layers has no raw form: the CLI says which layer, exit 3, no
    output folder (it was a traceback)."""
    from paleozoic_testing.host import compare_select

    model = tmp_path / "cmp.onnx"
    onnx.save(compare_select(), model)
    out = tmp_path / "out"
    assert cli_main(["compile", str(model), "-o", str(out), "--emit", "raw"]) == 3
    assert "layer 'select' (2 host layer(s) in all) computes on the host" in \
        capsys.readouterr().err
    assert not out.exists()


def test_raw_form_prints_an_open_clip_bound(tmp_path: Path) -> None:
    """An infinite Clip bound is the SDK call's double argument: numeric_limits, not text
    that does not compile (it was a ValueError)."""
    from onnx import TensorProto, helper

    consts = [helper.make_tensor("lo", TensorProto.FLOAT, [], [1e-12]),
              helper.make_tensor("hi", TensorProto.FLOAT, [], [np.inf])]
    graph = helper.make_graph(
        [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    queue = load_queue(model)
    files, _ = session_files(Model.build(queue, resolve_plan(queue, "fuse-all")), "clip", "raw")
    assert "std::numeric_limits<double>::infinity()));" in files["session.cpp"]
