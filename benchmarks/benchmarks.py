"""asv benchmarks for kernelscope, generated from the catalog.

No class here is written by hand: see kernelscope/timing/asv_suite.py. Names
are stable (``Square.time_warm``, ``Softmax.track_graph``, ...) and versions
pinned, so history survives refactoring.
"""

from kernelscope.timing import asv_suite

getattr(asv_suite, "preload", lambda: None)()  # older commits in a history run lack it
globals().update(asv_suite.build())
