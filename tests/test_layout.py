"""The house's rules, read from the source: no import circle between paleozoic's modules
(imports inside functions and under TYPE_CHECKING count too: a lazy import hides a circle,
it does not remove it)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "paleozoic"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the paleozoic modules it imports anywhere in its text. `from pkg import sub`
    of submodules depends on the submodules, not on pkg's __init__."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = subs if all(s in modules for s in subs) else [base, *subs]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_paleozoic() -> None:
    graph = import_graph()
    assert "paleozoic.codegen.emit" in graph and graph["paleozoic.codegen.emit"]
    assert circles(graph) == []


def test_the_library_does_not_import_the_test_helpers() -> None:
    """The helpers are their own distribution (testing/): the wheel has none of them, and
    no module of the library reaches for them, lazily or not."""
    assert not (PACKAGE / "testing").exists()
    leaning = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "paleozoic_testing" for n in names):
                leaning.append(str(path.relative_to(PACKAGE.parent)))
    assert leaning == []


def test_one_family_map_across_python_and_cpp() -> None:
    """A kind's family has one name everywhere: its ops module, its converters' module (or
    package) in the frontend, and its C++ header and source, which declare its class."""
    import paleozoic.ops as ops

    root = PACKAGE.parent
    convert = PACKAGE / "frontend" / "convert"
    assert ops.KINDS
    for name, kind in ops.KINDS.items():
        family = next(m.__name__.rpartition(".")[2] for m in ops._FAMILIES
                      if kind in m.FAMILY)
        assert (convert / f"{family}.py").exists() or (convert / family).is_dir(), family
        header = root / "runtime_cpp" / "include" / "paleozoic" / f"layers_{family}.h"
        assert (root / "runtime_cpp" / "wrapper" / f"layers_{family}.cpp").exists(), family
        cpp_class = kind.cpp_class.rpartition("::")[2]
        assert f"class {cpp_class} " in header.read_text(), (name, header.name)
