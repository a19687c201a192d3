"""Profiling a variant the way the lecture teaches: torch.profiler, NVTX ranges, the autograd profiler.

:mod:`kernelscope.profiling.torch_profiler` runs a catalog variant under
``torch.profiler`` with a wait/warmup/active schedule, inside NVTX ranges named
after its op and variant, and returns the key_averages table, the kernels it
launched and a chrome trace. It works on the CPU path too (CPU activity only),
which is how the tests check it.
"""
