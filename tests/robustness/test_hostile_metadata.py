"""Nothing from a model file or a plan file reaches emitted code unescaped.

A model whose every string field is hostile (PAYLOADS: quotes, `*/`, newlines with
`#error` and `#include`, backslashes at a line end, trigraphs, non-ASCII and control
characters, CMake variable references, 3,000-character names, names that meet once made
identifiers), saved under a file name with a newline and `#error` in it, goes through the
command line: compile, build, verify, on both SDKs and in the raw form. The emitted files
must have the token structure of the same model with plain names: the hostile text is
only ever inside comments and literals, in a form that cannot end them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from hostile import (
    PAYLOADS, NotInert, cmake_skeleton, make_hostile, preprocessor_lines, skeleton,
)
from paleozoic.runner.sdk import sdk_available

# A file name cannot hold "/": the rest of the ways out are here.
HOSTILE_FILE = 'evil\n#error injected_path "* ??=\\.onnx'


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "paleozoic", *args], cwd=cwd,
                          capture_output=True, text=True)


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from helpers import small_cnn_model

    root = tmp_path_factory.mktemp("hostile")
    plain = root / "plain.onnx"
    onnx.save(small_cnn_model(), str(plain))
    hostile = root / HOSTILE_FILE
    onnx.save(make_hostile(small_cnn_model()), str(hostile))
    return plain, hostile


@pytest.fixture(scope="module")
def sessions(models: tuple[Path, Path]) -> dict[str, Path]:
    """Plain and hostile sessions, wrapper and raw form, compiled by the command line."""
    plain, hostile = models
    out = {}
    for label, model in (("plain", plain), ("hostile", hostile)):
        for emit in ("wrapper", "raw"):
            folder = model.parent / f"{label}_{emit}"
            _ok(_cli("compile", str(model), "-o", str(folder), "--plan", "fuse-all",
                     "--emit", emit, cwd=model.parent))
            out[f"{label}_{emit}"] = folder
    return out


@pytest.mark.parametrize("emit", ["wrapper", "raw"])
def test_hostile_names_are_inert_in_emitted_files(sessions, emit):
    plain, hostile = sessions[f"plain_{emit}"], sessions[f"hostile_{emit}"]
    ours = (hostile / "session.cpp").read_text()
    assert skeleton(ours) == skeleton((plain / "session.cpp").read_text())
    assert preprocessor_lines(ours) == preprocessor_lines((plain / "session.cpp").read_text())
    assert cmake_skeleton((hostile / "CMakeLists.txt").read_text()) == \
        cmake_skeleton((plain / "CMakeLists.txt").read_text())
    # The file name is still there for a reader, escaped, on the lines it had.
    assert r'"evil\n#error injected_path \"* \?\?=\\.onnx"' in ours.splitlines()[2]
    # The JSON files carry the original text exactly.
    manifest = json.loads((hostile / "session.json").read_text())
    assert manifest["source"] == HOSTILE_FILE
    assert {i["onnx_name"] for i in manifest["inputs"]} <= {
        p + s for p in PAYLOADS for s in ("?", "*", "/", ".", "??", "**", "//", "..")}
    plan = json.loads((hostile / "plan.json").read_text())
    assert plan["model"].endswith(HOSTILE_FILE)
    for layer in plan["blocks"][0]["layers"]:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,79}", layer), layer


def test_identifiers_are_bounded_and_unique(sessions):
    source = (sessions["hostile_wrapper"] / "session.cpp").read_text()
    declared = re.findall(r"^  pz::\w+ (\w+)\{", source, flags=re.M)
    assert len(declared) == len(set(declared)) >= 10
    assert max(len(name) for name in declared) <= 80


@pytest.mark.parametrize("sdk,emit", [
    ("mock", "wrapper"), ("mock", "raw"),
    pytest.param("onednn", "wrapper", marks=pytest.mark.skipif(
        not sdk_available("onednn"), reason="the oneDNN SDK is not built")),
])
def test_hostile_session_builds_runs_and_verifies(sessions, models, sdk, emit):
    folder = sessions[f"hostile_{emit}"]
    _ok(_cli("build", str(folder), "--sdk", sdk, cwd=folder.parent))
    report = _ok(_cli("verify", str(folder), "--seed", "0", cwd=folder.parent))
    assert "PASS" in report
    # Names in the report are escaped: one line per output, no control characters.
    assert "\x1b" not in report and "#error" not in report.split("inputs:")[0]


def _plan_with(folder: Path, **changes: object) -> Path:
    plan = json.loads((folder / "plan.json").read_text())
    for key, value in changes.items():
        if key == "block_name":
            plan["blocks"][0]["name"] = value
        else:
            plan[key] = value
    path = folder.parent / f"plan_{len(list(folder.parent.glob('plan_*')))}.json"
    path.write_text(json.dumps(plan))
    return path


@pytest.mark.parametrize("name", [PAYLOADS[0], PAYLOADS[2], "caf\u00e9", "b" * 65, "9lives"])
def test_plan_block_names_must_be_identifiers(sessions, models, name):
    folder = sessions["plain_wrapper"]
    result = _cli("compile", str(models[0]), "-o", str(folder.parent / "refused"),
                  "--plan", str(_plan_with(folder, block_name=name)), cwd=folder.parent)
    assert result.returncode == 4, result.stderr
    assert "must be a C++ identifier" in result.stderr and repr(name)[:20] in result.stderr
    assert not (folder.parent / "refused").exists()


def test_plan_free_text_is_escaped(sessions, models):
    """strategy, model and notes are the plan's free text: kept, and printed escaped."""
    folder = sessions["plain_wrapper"]
    plan = _plan_with(folder, strategy=PAYLOADS[2] + PAYLOADS[1], model=PAYLOADS[0],
                      notes={PAYLOADS[5]: PAYLOADS[6]})
    out = folder.parent / "free_text"
    _ok(_cli("compile", str(models[0]), "-o", str(out), "--plan", str(plan),
             cwd=folder.parent))
    source = (out / "session.cpp").read_text()
    assert skeleton(source) == skeleton((folder / "session.cpp").read_text())
    assert '// Plan: "evil\\n#error injected\\n*\\057 int injected = 1; \\057*",' in source


def test_scanner_catches_each_way_out():
    """The checks above can fail: each payload pasted raw into a comment, a literal and a
    block comment of a one-line program is caught, except those that are harmless there
    (they are harmful as identifiers or in CMake, where other checks hold them)."""
    template = 'int main() {{ // {c}\n  const char* s = "{c}";\n  return 0; /* {c} */ }}\n'
    plain = skeleton(template.format(c="plain"))
    missed = []
    for text in PAYLOADS:
        try:
            if skeleton(template.format(c=text)) == plain:
                missed.append(text)
        except NotInert:
            pass
    assert missed == [PAYLOADS[7], PAYLOADS[10], PAYLOADS[11]]
