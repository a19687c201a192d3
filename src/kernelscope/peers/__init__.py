"""The suite's clocks beside peer timers: ``kernelscope crosscheck``.

For every variant at its op's sizes, in one process and on the same callable
(the suite's checked ``case.call``), the suite's four modes and the timer
each one is usually checked against:

==========  =====================================================  ============================================
suite mode  its peer                                               what both read
==========  =====================================================  ============================================
warm        ``torch.utils.benchmark.Timer.timeit``                 back-to-back calls, L2 warm
cold        ``triton.testing.do_bench``                            one call after an L2 flush
graph       ``triton.testing.do_bench_cudagraph``                  CUDA-graph replay, no launches
host        the same ``Timer`` readings, paired with host mode's   a host loop of calls, one synchronize
==========  =====================================================  ============================================

and, in a second process under Nsight Compute, the sum of the call's kernel
durations (kernel only, caches flushed before each kernel: shown, not gated).

* :mod:`~kernelscope.peers.measure`: the in-process clocks, one case at a time;
* :mod:`~kernelscope.peers.ncu_pass`: the Nsight Compute pass over every case;
* :mod:`~kernelscope.peers.data`: ``evidence/<machine>/peers.json``, its writer and reader;
* :mod:`~kernelscope.peers.agreement`: shares within 1% and 2%, the worst case, the gate (pure functions);
* :mod:`~kernelscope.peers.command`: the command itself (progress, table, summary, exit status).
"""
