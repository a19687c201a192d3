"""No import circles in kernelscope: between modules, and between packages (scripts/import_cycles.py, the same check).

A circle between modules fails on import order alone; one between packages (A
imports from B, B from A) means neither can be read, tested or moved without
the other. Imports inside functions count: a lazy import hides a circle from
Python, not from a reader. Only ``if TYPE_CHECKING:`` imports, which never run,
are left out. Read with ``ast``: nothing is imported, so the test takes well
under a second.
"""

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_cycles)


def test_kernelscope_has_no_import_circles():
    lines, circles = import_cycles.report()
    assert circles == 0, "\n" + "\n".join(lines)


def package(tmp_path, files: dict[str, str]) -> Path:
    """A package named kernelscope under tmp_path/src, from {relative path: source}; its folder."""
    src = tmp_path / "src" / "kernelscope"
    for rel, text in {"__init__.py": "", **files}.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return src


def test_a_lazy_import_inside_a_function_still_closes_a_circle(tmp_path):
    src = package(tmp_path, {
        "a.py": "from kernelscope.b import g\n",
        "b.py": "def g():\n    from kernelscope import a\n    return a\n",
    })
    lines, circles = import_cycles.report(src)
    assert circles == 2  # the modules, and the same two as kernelscope's children
    assert "  kernelscope.a <-> kernelscope.b" in lines


def test_two_packages_that_import_each_other_are_a_circle_though_no_two_modules_are(tmp_path):
    src = package(tmp_path, {
        "p/__init__.py": "", "p/m.py": "from kernelscope.q.n import x\n", "p/j.py": "y = 1\n",
        "q/__init__.py": "", "q/n.py": "x = 1\n", "q/k.py": "from kernelscope.p import j\n",
    })
    graph, _ = import_cycles.module_graph(src)
    assert import_cycles.cycles(graph) == []
    lines, circles = import_cycles.report(src)
    assert circles == 1 and "  kernelscope.p <-> kernelscope.q" in lines


def test_a_package_that_re_exports_its_modules_is_no_circle_unless_they_import_it_back(tmp_path):
    files = {"t/__init__.py": "from kernelscope.t.cold import f\nfrom kernelscope.t.base import MIN\n",
             "t/base.py": "MIN = 6\n", "t/cold.py": "from kernelscope.t.base import MIN\n\ndef f():\n    return MIN\n"}
    assert import_cycles.report(package(tmp_path / "one", files))[1] == 0
    files["t/cold.py"] = "from kernelscope.t import MIN\n\ndef f():\n    return MIN\n"  # from the package: a circle
    lines, circles = import_cycles.report(package(tmp_path / "two", files))
    assert circles == 1 and "  kernelscope.t <-> kernelscope.t.cold" in lines


def test_imports_for_the_type_checker_alone_are_left_out(tmp_path):
    src = package(tmp_path, {
        "catalog.py": "from kernelscope.validation import check\n",
        "validation.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                          "    from kernelscope.catalog import Variant\n\ndef check(v: 'Variant'):\n    pass\n"),
    })
    assert import_cycles.report(src)[1] == 0
