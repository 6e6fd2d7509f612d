"""Hostile metadata: models whose every string field tries to break out of emitted code, and
a scanner that says whether an emitted C++ file still has the shape its template gave it.

Used by test_hostile_metadata.py and the fuzzer's metadata mutation (test_fuzz.py)."""

from __future__ import annotations

import re
from typing import Callable

import onnx
from hypothesis import strategies as st

# Each tries another way out of a comment, a string literal or a line of C++ or CMake.
PAYLOADS = (
    'x"); std::system("touch pwned"); //',
    "*/ int injected = 1; /*",
    "evil\n#error injected\n",
    "evil\r\n#include \"/etc/passwd\"",
    "back\\",
    "splice\\ ",
    "??/ trigraph ??= ??'",
    "__attribute__((constructor)) static void pwn() { std::abort(); }",
    "caf\u00e9 \u4e2d\u6587 \u202eright-to-left \U0001f600",
    "\x1b[2J\x07\x00nul",
    "${CMAKE_COMMAND} $(rm -rf) `id` #[[ bracket",
    "L" * 3000,
)


def payload(i: int) -> str:
    return PAYLOADS[i % len(PAYLOADS)]


def make_hostile(model: onnx.ModelProto,
                 text: Callable[[int], str] = payload) -> onnx.ModelProto:
    """A copy of `model` whose node, tensor, initializer and graph names, doc strings,
    producer fields and metadata are hostile text (`text(i)`: PAYLOADS in turn by default).
    Distinct names stay distinct in ONNX but many meet once made identifiers (they differ
    only in punctuation), so the session's names must be made unique again."""
    hostile = onnx.ModelProto()
    hostile.CopyFrom(model)
    graph = hostile.graph
    names: list[str] = []
    for node in graph.node:
        names += [n for n in list(node.input) + list(node.output) if n and n not in names]
    for info in list(graph.input) + list(graph.output):
        if info.name not in names:
            names.append(info.name)
    # Punctuation-only suffixes: every tensor of one payload sanitises to the same stem.
    rename: dict[str, str] = {}
    for i, name in enumerate(names):
        new = text(i) + "?*/."[i % 4]
        while new in rename.values():
            new += "?*/."[i % 4]
        rename[name] = new
    used: set[str] = set()
    for i, node in enumerate(graph.node):
        # Distinct (onnxruntime refuses repeated node names), equal once made identifiers.
        node.name = text(i + 3) + "."
        while node.name in used:
            node.name += "."
        used.add(node.name)
        node.doc_string = text(i + 5)
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename.get(n, n) for n in node.output]
    for collection in (graph.input, graph.output, graph.value_info, graph.initializer):
        for item in collection:
            item.name = rename.get(item.name, item.name)
    for i, field in enumerate(("producer_name", "producer_version", "domain", "doc_string")):
        setattr(hostile, field, text(i + 1))
    graph.name = text(2)
    graph.doc_string = text(7)
    entry = hostile.metadata_props.add()
    entry.key, entry.value = text(4), text(6)
    onnx.checker.check_model(hostile)
    return hostile


# Characters that start escapes, comments, literals, preprocessor lines and trigraphs, and
# some outside ASCII.
_NASTY = st.sampled_from(list('"\'\\/*?#\n\r\t\x00\x1b$`{}[]();') +
                         ["\u00e9", "\u4e2d", "\u202e", "\U0001f600"])


@st.composite
def hostile_texts(draw: st.DrawFn) -> Callable[[int], str]:
    """The fuzzer's metadata mutation: a text for every string field of a model (see
    make_hostile), each a payload or a random mix of nasty and plain characters."""
    pool = draw(st.lists(st.one_of(
        st.sampled_from(PAYLOADS),
        st.text(st.one_of(_NASTY, st.characters(min_codepoint=32, max_codepoint=126)),
                min_size=1, max_size=24)), min_size=1, max_size=6))
    return lambda i: pool[i % len(pool)]


class NotInert(AssertionError):
    """The emitted file no longer has the shape its template gave it."""


_TRIGRAPH = re.compile(r"\?\?[=/'()!<>\-]")


def code_outside_comments_and_literals(source: str) -> str:
    """The C++ source with every comment and string/character literal removed (a literal
    becomes `""`), checking on the way what could change the program: a line comment
    spliced to the next line, a trigraph, a non-ASCII or control character, a literal or
    block comment that runs past its line, a `/*` inside a block comment."""
    if _TRIGRAPH.search(source):
        raise NotInert(f"trigraph at {_TRIGRAPH.search(source).start()}")
    if not source.isascii():
        raise NotInert("non-ASCII text")
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", source):
        raise NotInert("a control character")
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            if source[i:end].rstrip(" \t").endswith("\\"):
                raise NotInert(f"line comment at {i} ends in a line splice")
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                raise NotInert(f"unterminated block comment at {i}")
            body = source[i + 2:end]
            if "/*" in body or "\n" in body:
                raise NotInert(f"block comment {body[:40]!r} nests or spans lines")
            out.append(" ")
            i = end + 2
        elif source[i] in "\"'":
            quote, j = source[i], i + 1
            while j < n and source[j] != quote:
                if source[j] == "\n":
                    raise NotInert(f"literal at {i} runs past its line")
                j += 2 if source[j] == "\\" else 1
            if j >= n:
                raise NotInert(f"unterminated literal at {i}")
            out.append(quote * 2)
            i = j + 1
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def skeleton(source: str) -> str:
    """The code outside comments and literals, every identifier spelt I and blank lines
    left out (a section comment from an ONNX name scope comes with one): equal for two
    sessions of one model whose names differ, different if text became code."""
    code = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", "I", code_outside_comments_and_literals(source))
    return "\n".join(line for line in code.splitlines() if line.strip()) + "\n"


def preprocessor_lines(source: str) -> list[str]:
    code = code_outside_comments_and_literals(source)
    return [line.strip() for line in code.splitlines() if line.lstrip().startswith("#")]


def cmake_shape(text: str) -> list[str]:
    """Each CMake line reduced to whether it is a comment, with the text after `#` dropped:
    a payload that ends a comment shows as an extra line, a bracket comment as `#[`."""
    if not text.isascii():
        raise NotInert("non-ASCII text in CMakeLists.txt")
    shape = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("#["):
            raise NotInert(f"bracket comment {line!r}")
        shape.append("#" if stripped.startswith("#") else re.sub(r"#.*", "", line))
    return shape


def cmake_skeleton(text: str) -> list[str]:
    """cmake_shape with the project's name (which is the model's) spelt NAME, if it is an
    identifier."""
    return [re.sub(r"project\([A-Za-z_][A-Za-z0-9_]* ", "project(NAME ", line)
            for line in cmake_shape(text)]
