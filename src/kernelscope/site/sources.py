"""Where a kernel's source lives, as the site includes it.

Pages never copy code: they include the real files with pymdownx.snippets
(``--8<-- "path:start:end"``, ``check_paths`` on), so a moved file fails the
build. This module finds the files and line ranges: a Python symbol by its
syntax tree (a function, a class, a method as ``Class.method``, or a module
level assignment), a CUDA kernel by its ``__global__`` signature and braces.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from kernelscope.catalog import Variant

PACKAGE = Path(__file__).resolve().parents[1]  # src/kernelscope
ROOT = PACKAGE.parents[1]  # the repository: snippets' base path
CUDA_DIR = PACKAGE / "backends" / "cuda"
LANGUAGE = {".py": "python", ".cu": "cuda", ".cuh": "cuda", ".def": "cpp", ".cpp": "cpp", ".ptx": "ptx"}


class SourceNotFound(LookupError):
    pass


@dataclass(frozen=True)
class SourceRef:
    path: Path  # absolute
    start: int | None = None  # 1-based, inclusive; None: the whole file
    end: int | None = None

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    @property
    def language(self) -> str:
        return LANGUAGE.get(self.path.suffix, "text")

    def snippet(self, indent: str = "", title: str | None = None) -> str:
        """A fenced block that includes these lines, for a Markdown page."""
        span = f":{self.start}:{self.end}" if self.start else ""
        where = self.rel + (f" (lines {self.start}-{self.end})" if self.start else "")
        opts = f' title="{title or where}"' + (f' linenums="{self.start}"' if self.start else "")
        return "\n".join([f"{indent}``` {self.language}{opts}", f'{indent}--8<-- "{self.rel}{span}"', f"{indent}```"])


def module_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SourceNotFound(f"module {module} not found")
    return Path(spec.origin)


def python_symbol(path: Path, symbol: str) -> SourceRef:
    """The lines of ``symbol`` (``name`` or ``Class.method``) in a Python file, decorators and comments above included."""
    if not path.exists():
        raise SourceNotFound(f"{path} does not exist")
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    scope: list[ast.stmt] = tree.body
    node = None
    for part in symbol.split("."):
        found = [n for n in _statements(scope) if _defines(n, part)]
        # a def before a plain assignment: vector.py defines its intrinsics under `if SIMULATED: ... else:`, the
        # simulator's names assigned, the GPU's defined
        node = next((n for n in found if not isinstance(n, (ast.Assign, ast.AnnAssign))), found[0] if found else None)
        if node is None:
            raise SourceNotFound(f"{symbol} is not defined in {path.relative_to(ROOT)}")
        scope = getattr(node, "body", [])
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    while start > 1 and lines[start - 2].lstrip().startswith("#"):  # a comment block that introduces it
        start -= 1
    return SourceRef(path, start, node.end_lineno)


def _statements(scope: list[ast.stmt]):
    """The statements of a scope, those of its if/else blocks (at any depth) included, in order."""
    for node in scope:
        yield node
        if isinstance(node, ast.If):
            yield from _statements(node.body)
            yield from _statements(node.orelse)


def _defines(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return False


def cuda_kernel(path: Path, name: str) -> SourceRef:
    """The lines of ``__global__ void name(...) { ... }`` (or a ``__device__`` function's) in a .cu or .cuh file,
    its ``template`` line and leading comment included."""
    if not path.exists():
        raise SourceNotFound(f"{path} does not exist")
    text = path.read_text()
    match = re.search(rf"__(?:global|device)__[^;{{}}()]*?\b{re.escape(name)}\s*\(", text)
    if match is None:
        raise SourceNotFound(f"no __global__ or __device__ function {name} in {path.relative_to(ROOT)}")
    depth, end = 0, None
    for i in range(text.index("{", match.end()), len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            end = i
            break
    lines = text.splitlines()
    start = text.count("\n", 0, match.start()) + 1
    if start > 1 and lines[start - 2].lstrip().startswith("template"):
        start -= 1
    while start > 1 and lines[start - 2].lstrip().startswith("//"):
        start -= 1
    return SourceRef(path, start, text.count("\n", 0, end) + 1)


def variant_sources(variant: Variant) -> list[SourceRef]:
    """What a reader should see of a variant's kernel.

    CUDA C++: the op's .cu file and the op's own headers it includes (``<op>_*``: softmax's kernels, one family
    a header), each after those it includes (the Python wrapper only forwards). A module
    holding one op's kernels (Triton, Numba): the whole module, launch code
    included. A package holding one op's kernels, a module a kernel family (Triton's and Numba's softmax): its
    __init__.py, then the module that defines the variant's function and the package's modules it imports, each
    after the module that imports it, and so for its plan function. A module shared by every op (torch eager,
    torch.compile): the variant's own definition, and for a compiled one the eager function it compiles.
    """
    module, _, attr = variant.impl.partition(":")
    if variant.backend == "cuda":
        from kernelscope.backends.cuda.build import included

        cu = CUDA_DIR / f"{variant.op}.cu"
        return [SourceRef(cu)] + [SourceRef(h) for h in included(cu) if h.name.startswith(f"{variant.op}_")]
    path = module_path(module)
    if path.name == "__init__.py" and path.parent.name == variant.op:
        plan_module, _, plan_attr = (variant.plan or "").partition(":")
        return [SourceRef(p) for p in _package_modules(path, [attr] + ([plan_attr] if plan_module == module else []))]
    if path.stem == variant.op:  # and the sibling modules it takes its kernels from (numba/elementwise.py)
        return [SourceRef(path)] + [SourceRef(p) for p in _sibling_modules(path, module)]
    refs = [python_symbol(path, attr)]
    tree = ast.parse(path.read_text())
    for node in tree.body:  # square = torch.compile(torch_ops.square, ...): show torch_ops.square too
        if _defines(node, attr) and isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for arg in node.value.args:
                if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
                    owner = _imported_module(tree, arg.value.id)
                    if owner:
                        refs.append(python_symbol(module_path(owner), arg.attr))
    return refs


def _sibling_modules(path: Path, module: str) -> list[Path]:
    """Modules of ``module``'s own package that it imports by name (``from pkg import elementwise``)."""
    package = module.rpartition(".")[0]
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module == package:
            found += [path.parent / f"{a.name}.py" for a in node.names if (path.parent / f"{a.name}.py").exists()]
    return found


def _package_modules(init: Path, names: list[str]) -> list[Path]:
    """A package's __init__.py, then for each of ``names`` (which __init__.py imports from its modules) the module
    that defines it and, depth first, the package's modules that module imports (``from .plan import ...``)."""
    found = [init]

    def visit(path: Path) -> None:
        if path not in found and path.exists():
            found.append(path)
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                    visit(path.parent / f"{node.module}.py")

    exported = {alias.asname or alias.name: node.module for node in ast.parse(init.read_text()).body
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module for alias in node.names}
    for name in names:
        if name in exported:
            visit(init.parent / f"{exported[name]}.py")
    return found


def _imported_module(tree: ast.Module, alias: str) -> str | None:
    """The module that ``from pkg import alias`` (or ``import pkg.alias``) names."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for name in node.names:
                if (name.asname or name.name) == alias:
                    return f"{node.module}.{name.name}"
    return None


def source(path: str, symbol: str | None = None) -> SourceRef:
    """A file of the repository, or one symbol in it (Python name, or CUDA kernel in a .cu or .cuh file)."""
    full = ROOT / path
    if not full.exists():
        raise SourceNotFound(f"{path} does not exist in the repository")
    if symbol is None:
        return SourceRef(full)
    if full.suffix in (".cu", ".cuh"):
        return cuda_kernel(full, symbol)
    return python_symbol(full, symbol)
