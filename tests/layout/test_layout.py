"""The house's rules that the code's own imports and shapes can tell (docs/layout.md): no circle of imports
between two files (the statechart's inside excepted, where xstate's own algorithm is mutually recursive), no
import inside a function to dodge one, and no class over about 400 lines. The layers themselves are
import-linter's contracts (pyproject.toml), which `make test` runs too."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "console", "jr2")
STATECHART = "engine.core.statechart"
MAX_CLASS_LINES = 420


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def _outside_statechart(component: list[str]) -> bool:
    return not all(m == STATECHART or m.startswith(STATECHART + ".") for m in component)


def test_no_circle_of_imports_between_files() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    for package in PACKAGES:  # a package's __init__ importing its own modules is no circle between files
        for module in graph.find_descendants(package) | {package}:
            for child in graph.find_children(module):
                if graph.direct_import_exists(importer=module, imported=child):
                    graph.remove_import(importer=module, imported=child)
    circles = [c for c in _cycles(graph) if _outside_statechart(c)]
    assert circles == [], "import circles between files: " + "; ".join(" <-> ".join(c) for c in circles)


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts)


def test_no_import_inside_a_function_in_the_core() -> None:
    """Imports inside functions were how the statechart dodged its circles; the core has none left (a module
    that is optional at run time, such as a provider's SDK, is not in the core)."""
    inside = []
    for path in _sources():
        if "core" not in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        inside.append(f"{path.relative_to(ROOT)}:{inner.lineno}")
    assert inside == []


def test_no_class_over_about_400_lines() -> None:
    big = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    big.append(f"{path.relative_to(ROOT)}:{node.name} ({lines} lines)")
    assert big == []
