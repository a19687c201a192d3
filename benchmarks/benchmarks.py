"""asv benchmarks for kernelscope, generated from the catalog.

No class here is written by hand: see kernelscope/asv/suite.py. The working
tree says what the benchmarks are (their parameters and versions) and the
commit under test supplies the code, so a case keeps its name across commits
(kernelscope/asv/identity.py, loaded from this tree: the installed kernelscope
is the commit under test, which may predate it).
"""

import importlib.util
from pathlib import Path

_here = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "kernelscope_tree_identity", _here.parent / "src" / "kernelscope" / "asv" / "identity.py")
identity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(identity)
globals().update(identity.benchmarks(_here))
