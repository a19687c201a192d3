"""kernelscope's asv integration, in one place.

The benchmark side (what runs in asv's benchmark processes):

* :mod:`~kernelscope.asv.suite` -- the classes, generated from the catalog: one per op and dtype, and
  one per op and dtype for the host-dependent modes (``SquareHost``), ``FirstCall`` and ``Launch``.
* :mod:`~kernelscope.asv.identity` -- the classes asv sees: parameters and versions from the working
  tree, code from the commit under test, so a case keeps its name across commits.
* :mod:`~kernelscope.asv.sibling_process` -- a case's other modes measured in its own process.

The asv side (what the environment plugin adds to asv's own process):

* :mod:`~kernelscope.asv.env` -- the ``syssite`` environment; loading it installs everything below.
* :mod:`~kernelscope.asv.saves` -- results saved after every case, merged under a lock.
* :mod:`~kernelscope.asv.rounds`, :mod:`~kernelscope.asv.siblings`, :mod:`~kernelscope.asv.intervals`
  -- further processes only where a case needs them, one process per case, honest intervals.
* :mod:`~kernelscope.asv.hooks` -- every private name of asv and asv_runner the above relies on.
* :mod:`~kernelscope.asv.forkservers` -- a commit's forkserver kept for its next round in asv continuous's turns.
* :mod:`~kernelscope.asv.parallel` -- one asv process per GPU of a box.

And :mod:`~kernelscope.asv.migrate` -- result files stored by an older kernelscope, re-keyed as the suite keys
them now (``kernelscope migrate-results``).

Nothing is imported here: asv loads the plugin as ``src.kernelscope.asv.env`` without torch.
"""
