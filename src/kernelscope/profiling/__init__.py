"""Profiling a variant the way the lecture teaches, captured as data (``kernelscope profile``).

* :mod:`~kernelscope.profiling.torch_profiler`: a catalog variant under ``torch.profiler`` (a wait/warmup/active
  schedule) inside NVTX ranges named ``op:variant``: the key_averages table, the kernels, a chrome trace; the
  legacy autograd profiler. Works on the CPU path too (CPU activity only), which is how the tests check it.
* :mod:`~kernelscope.profiling.ncu`: Nsight Compute over the selected variants in one process, filtered to
  each variant's own range; its CSV parsed into kernel metrics and rule hints, its printout split per variant.
* :mod:`~kernelscope.profiling.code`: the compiled code per backend (Triton and Numba PTX/SASS, CUDA C++ PTX,
  ptxas report and SASS through nvcc, the module Inductor generated).
* :mod:`~kernelscope.profiling.demos`: the lecture's demonstrations, measured.
* :mod:`~kernelscope.profiling.capture`: all of it per variant into ``profiles/<machine>/``.
* :mod:`~kernelscope.profiling.crosscheck`: ncu's kernel time against the suite's warm-mode time.
* :mod:`~kernelscope.profiling.artifacts`: the format of that folder, as dataclasses; the site reads it.
"""
