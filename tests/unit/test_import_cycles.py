"""No import cycles between this project's modules, counting the imports inside functions too.

A function-level import hides a cycle from Python (the module is loaded by the time the function
runs) but not from a reader: the two modules still depend on each other. This walks every ``.py``
file of the runtime and CLI packages with ``ast``, resolves every import to a module of this
project (``import a.b``, ``from a import b`` where ``b`` is a submodule, relative forms), and finds
the strongly connected components of that graph (Tarjan). Imports under ``if TYPE_CHECKING:`` are
left out: they never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("plugin", "api", "workers", "cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those guarded by ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _nearest(name: str, modules: dict[str, Path]) -> str | None:
    """``name`` if it is a project module, else its closest project ancestor (``a.b.C`` → ``a.b``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def dependencies(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                pkg = ".".join(base + ([node.module] if node.module else []))
            else:
                pkg = node.module or ""
            # ``from pkg import sub`` imports the submodule when there is one, else names in pkg
            targets = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in modules else pkg
                       for a in node.names]
        for target in targets:
            resolved = _nearest(target, modules)
            if resolved is not None and resolved != name:
                out.add(resolved)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: dependencies(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle_and_its_members() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_relative_submodule_and_function_level_imports_resolve(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "from . import a\n",
             "pkg/a.py": "def f():\n    from .sub import b\n    from .sub.b import NAME\n",
             "pkg/sub/__init__.py": "",
             "pkg/sub/b.py": "from ..a import f\nimport pkg.sub\nimport json\n"
                             "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n",
             "pkg/c.py": "from pkg import a, sub\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    modules = {".".join(Path(rel).with_suffix("").parts).removesuffix(".__init__"): tmp_path / rel
               for rel in files}
    graph = {name: dependencies(name, path, modules) for name, path in modules.items()}
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub": set(),
                     "pkg.sub.b": {"pkg.a", "pkg.sub"}, "pkg.c": {"pkg.a", "pkg.sub"}}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]
    assert "workers.names" in import_graph()["workers.tasks"]


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (module and function-level imports):\n" + "\n".join(
        " <-> ".join(c) for c in found)
