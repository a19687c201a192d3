"""Evidence: kernelscope's clocks and results checked against independent ones, kept as data in ``evidence/<machine>/``.

Each module answers one question about the method, on a GPU box, and writes
its answer to a file the site shows beside the results:

* :mod:`~kernelscope.evidence.peers` -- do the suite's clocks read what
  independent timers read on the same call? (``kernelscope crosscheck``:
  ``torch.utils.benchmark``, ``triton.testing.do_bench`` and
  ``do_bench_cudagraph`` in process, Nsight Compute in a second one;
  ``peers.json``)
* :mod:`~kernelscope.evidence.canary` -- does the regression gate flag a
  slowdown of a known size? (commits that slow one variant's kernel by 10% and
  20%, ``asv continuous`` against each; ``canary.json``). What such a commit
  sets is :mod:`kernelscope.slowdown`, which the catalog reads whenever a
  variant runs, so it sits beside the catalog, not here.
* :mod:`~kernelscope.evidence.floors` -- how far is each hard case from the
  least it must cost? (a copy of its bytes, and each wide-row design with its
  exps made free, timed with the suite's warm clock; ``floors.json``)

Nothing is imported here: ``python -m kernelscope.evidence.canary`` and
``python -m kernelscope.evidence.floors`` run without torch.
"""
