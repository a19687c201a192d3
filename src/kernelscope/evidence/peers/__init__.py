"""The suite's clocks beside peer timers: ``kernelscope crosscheck``.

The question it answers: does each of the suite's timing modes read what an
independent timer reads on the same call, and where not, why?

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

* :mod:`~kernelscope.evidence.peers.measure`: the in-process clocks, one case at a time;
* :mod:`~kernelscope.evidence.peers.ncu_pass`: the Nsight Compute pass over every case;
* :mod:`~kernelscope.evidence.peers.data`: ``evidence/<machine>/peers.json``, its writer and reader;
* :mod:`~kernelscope.evidence.peers.agreement`: shares within 1% and 2%, the worst case, the gate (pure functions);
* :mod:`~kernelscope.evidence.peers.command`: the command itself (progress, table, summary, exit status).
"""
