"""kernelscope: the GPU MODE profiling lecture's kernels on every backend, checked and timed."""

__version__ = "0.1.0"
