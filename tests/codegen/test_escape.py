"""The escapes of codegen/escape.py against the compiler: a string literal means exactly its
text (UTF-8), a comment stays a comment under the strictest flags, an identifier is one,
and the template guard refuses text that was not escaped."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paleozoic.codegen.environment import make_environment
from paleozoic.codegen.escape import (
    CPP_KEYWORDS, MAX_IDENT, Code, UnescapedText, cmake_comment, cpp_comment, cpp_ident,
    cpp_string, guard, terminal_text,
)

GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed")

NASTY = [
    "", "plain text", 'quote " and \\ backslash', "line\nbreak\r\n", "tab\there",
    "end\\", "end\\ ", "??/", "??=define", "???=", "?\ud800?=", "*/", "/*", "a*/b/*c", "//x",
    "caf\u00e9 \u4e2d\u6587 \U0001f600 \u202e", "\x00\x01\x1b[2J\x7f\x85", "\\x41\\101",
    "\\u0041", "%s%n", "x" * 5000,
]
# Printable text, control characters, the characters that start escapes or comments, and
# some outside ASCII (surrogates excluded: they are not text).
TEXTS = st.text(st.characters(blacklist_categories=["Cs"]) | st.sampled_from('"\\?*/#\n'),
                max_size=40)


def _compile_and_run(source: str, folder: Path, *flags: str) -> bytes:
    cpp, exe = folder / "probe.cpp", folder / "probe"
    cpp.write_text(source)
    subprocess.run([GXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", *flags, str(cpp),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], check=True, capture_output=True).stdout


@needs_gxx
def test_string_literals_mean_their_text(tmp_path):
    """Every literal, compiled and written out byte for byte, is the UTF-8 of its text
    (with trigraphs on as well: -std=c++14 -trigraphs)."""
    texts = NASTY + [chr(c) for c in range(1, 0x80)] + ["\x00mid"]
    lines = [f"  put({cpp_string(t)}, sizeof({cpp_string(t)}) - 1);" for t in texts]
    source = ("#include <cstdio>\n#include <cstdint>\n"
              "static void put(const char* s, std::size_t n) {\n"
              "  std::fwrite(&n, sizeof n, 1, stdout); std::fwrite(s, 1, n, stdout);\n}\n"
              "int main() {\n" + "\n".join(lines) + "\n}\n")
    for flags in ((), ("-std=c++14", "-trigraphs", "-Wno-trigraphs")):
        out = _compile_and_run(source, tmp_path, *flags)
        got, i = [], 0
        while i < len(out):
            n = int.from_bytes(out[i:i + 8], "little")
            got.append(out[i + 8:i + 8 + n])
            i += 8 + n
        # A lone surrogate is not text; it becomes "?".
        assert got == [t.encode("utf-8", errors="replace") for t in texts]


@needs_gxx
def test_comments_stay_comments(tmp_path):
    """Each text in a line comment and a block comment, followed by a statement on the next
    line: compiles under -Werror (no trigraph, no splice, no nested comment warning) and
    the statement still runs."""
    body = "\n".join(f"  // {cpp_comment(t)}\n  /* {cpp_comment(t)} */ ++n;" for t in NASTY)
    source = (f"#include <cstdio>\nint main() {{\n  int n = 0;\n{body}\n"
              f"  std::printf(\"%d\", n);\n}}\n")
    for flags in ((), ("-std=c++14", "-trigraphs")):
        assert _compile_and_run(source, tmp_path, *flags) == str(len(NASTY)).encode()


def test_plain_comments_read_as_written():
    assert cpp_comment("conv1 .. fc8 (22 layers)") == "conv1 .. fc8 (22 layers)"
    assert cpp_comment("a\nb") == '"a\\nb"'
    assert cmake_comment("squeezenet inference session") == "squeezenet inference session"


@given(TEXTS)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_escaped_forms_cannot_break_out(text):
    for out in (cpp_string(text), cpp_comment(text), cmake_comment(text)):
        assert out.isascii() and out.isprintable()
        assert "??" not in out and "*/" not in out and "/*" not in out
        assert not out.endswith("\\")
        guard(out)  # escaped text is Code: printed as is
    literal = cpp_string(text)[1:-1]
    assert '"' not in literal.replace('\\"', "").replace("\\\\", "")


@given(TEXTS)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_identifiers(text):
    ident = cpp_ident(text, {"main"})
    assert ident.isascii() and ident.isidentifier() and not ident.startswith("_")
    assert ident not in CPP_KEYWORDS and ident != "main"
    assert len(ident) <= MAX_IDENT + 1


def test_long_names_keep_a_prefix_and_stay_distinct():
    a, b = cpp_ident("layer" + "x" * 500 + "a"), cpp_ident("layer" + "x" * 500 + "b")
    assert a != b and a.startswith("layerxxx") and len(a) == len(b) <= MAX_IDENT


def test_guard_refuses_unescaped_text():
    env = make_environment()
    template = env.from_string("// {{ name }}\nconst char* s = \"{{ name }}\";\n")
    assert "conv1_weight" in template.render(name="conv1_weight")
    for bad in ("a\nb", 'a"b', "a\\", "x */ y", "??=", "#error", "caf\u00e9"):
        with pytest.raises(UnescapedText):
            template.render(name=bad)
    assert env.from_string("{{ name|cpp_string }}").render(name="a\nb") == '"a\\nb"'
    assert env.from_string("{{ code }}").render(code=Code('f("x");')) == 'f("x");'
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()


def test_terminal_text():
    assert terminal_text("prob") == "prob"
    assert terminal_text("a\nb\x1b[2J") == "a\\nb\\x1b[2J"
    assert terminal_text("caf\u00e9") == "caf\u00e9"
