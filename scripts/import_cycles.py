"""Import circles in kernelscope's own code, found without importing it.

Reads every module under src/kernelscope with ``ast`` and collects every import
it makes, at module level and inside functions (a lazy import still ties two
modules together; only imports under ``if TYPE_CHECKING:``, which never run,
are left out), then prints the strongly connected components of two graphs:

* **modules**: an edge from a module to each kernelscope module it imports
  (``from kernelscope.timing import x`` reaches the package ``kernelscope.timing``,
  its ``__init__``; ``from kernelscope.timing import cold`` reaches the submodule);
* **packages**: the same edges between kernelscope's top-level subpackages and
  modules (``timing``, ``results``, ``cli``, ...), and, within each package,
  between its direct children (``backends.cuda``, ``backends.triton``, ...).

A component of more than one node is a circle. The exit status is 1 when there
is one, so the test suite (tests/test_imports.py) runs the same check.

Usage: python scripts/import_cycles.py [--src src/kernelscope] [--edges]
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "kernelscope"


def module_names(src: Path) -> dict[str, Path]:
    """Every module under ``src`` (the package's folder) by its dotted name; a package by its own name."""
    names = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_package(name: str, names: dict[str, Path]) -> bool:
    return names[name].name == "__init__.py"


def _type_checking_only(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports a type checker reads and Python never runs."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree``, at any depth (function bodies included), but those under ``if TYPE_CHECKING:``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if _type_checking_only(node):
            todo.extend(node.orelse)  # the else branch does run
            continue
        todo.extend(ast.iter_child_nodes(node))


def imports_of(name: str, path: Path, names: dict[str, Path]) -> list[tuple[str, int, frozenset[str] | None]]:
    """Every import of a kernelscope module in ``name``: (the module, its line, the names taken from it or None)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, int, frozenset[str] | None]] = []

    def add(target: str, line: int, taken: frozenset[str] | None) -> None:
        # the longest prefix that is a module of ours: ``import a.b.c`` of a name in a.b reaches a.b
        while target and target not in names:
            target = target.rpartition(".")[0]
            taken = None
        if target and target != name:
            found.append((target, line, taken))

    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    add(alias.name, node.lineno, None)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                here = name if _is_package(name, names) else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    here = here.rpartition(".")[0]
                base = f"{here}.{node.module}" if node.module else here
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            taken_from_base = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in names:
                    add(sub, node.lineno, None)
                else:
                    taken_from_base.append(alias.name)
            if taken_from_base:
                add(base, node.lineno, frozenset(taken_from_base))
    return found


def module_graph(src: Path) -> tuple[dict[str, set[str]], dict[tuple[str, str], tuple[Path, int]]]:
    """Edges between modules, and where each edge is first written (file, line)."""
    names = module_names(src)
    graph: dict[str, set[str]] = {name: set() for name in names}
    where: dict[tuple[str, str], tuple[Path, int]] = {}
    for name, path in names.items():
        for target, line, _ in sorted(imports_of(name, path, names), key=lambda t: t[1]):
            graph[name].add(target)
            where.setdefault((name, target), (path, line))
    return graph, where


def package_graphs(graph: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """For each package P, the graph between P's direct children (each child standing for everything under it).

    An import between two modules under the same child is inside that child; an
    import of P itself (its ``__init__``) from under one of its children is left
    out, since P's children are what is compared here.
    """
    packages = {name for name in graph for other in graph if other.startswith(name + ".")}
    graphs: dict[str, dict[str, set[str]]] = {}
    for package in sorted(packages):
        prefix = package + "."
        children: dict[str, set[str]] = defaultdict(set)

        def child(module: str) -> str | None:
            if not module.startswith(prefix):
                return None
            return prefix + module[len(prefix):].split(".")[0]

        for module, targets in graph.items():
            a = child(module)
            if a is None:
                continue
            children[a]
            for target in targets:
                b = child(target)
                if b is not None and b != a:
                    children[a].add(b)
        graphs[package] = dict(children)
    return graphs


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _rel(path: Path) -> Path:
    return path.relative_to(ROOT) if ROOT in path.parents else path


def report(src: Path = ROOT / "src" / PACKAGE) -> tuple[list[str], int]:
    """The lines to print, and how many circles there are (modules and packages together)."""
    graph, where = module_graph(src)
    lines: list[str] = []
    found = cycles(graph)
    count = len(found)
    lines.append(f"module level: {len(found)} circle(s)")
    for component in found:
        lines.append("  " + " <-> ".join(component))
        members = set(component)
        for a in component:
            for b in sorted(graph[a] & members):
                path, line = where[(a, b)]
                lines.append(f"    {a} -> {b}   ({_rel(path)}:{line})")
    for package, g in package_graphs(graph).items():
        found = cycles(g)
        count += len(found)
        if not found and package != PACKAGE:
            continue
        lines.append(f"package level, between the children of {package}: {len(found)} circle(s)")
        for component in found:
            lines.append("  " + " <-> ".join(component))
            members = set(component)
            for a in component:
                for b in sorted(g[a] & members):
                    # every module-level import that makes this package-level edge
                    for (m, t), (path, line) in sorted(where.items()):
                        if (m == a or m.startswith(a + ".")) and (t == b or t.startswith(b + ".")):
                            lines.append(f"    {a} -> {b}   ({m} imports {t}, {_rel(path)}:{line})")
    return lines, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src" / PACKAGE, help="the package's folder")
    parser.add_argument("--edges", action="store_true", help="also print every module-level import edge")
    args = parser.parse_args(argv)
    lines, count = report(args.src.resolve())
    print("\n".join(lines))
    if args.edges:
        graph, _ = module_graph(args.src.resolve())
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print(f"{a} -> {b}")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
