"""Two runs compared: the rerun criteria over compare rows (kernelscope.results.compare)."""


def _row(benchmark, a, b, mark=" ", interval=None, samples=30):
    return {"benchmark": f"benchmarks.{benchmark}", "a": a, "b": b, "ratio": b / a, "mark": mark,
            "interval_a": interval or (a * 0.99, a * 1.01), "samples_a": samples}


def test_rerun_criteria_judge_each_kind_of_benchmark_by_its_own_spread():
    from kernelscope.results import compare

    rows = [
        _row("Square.time_warm('square-torch', '16384x16384', 'float32')", 713e-6, 714e-6),  # 0.1%: close
        _row("Square.track_cold('square-torch', '4096x4096', 'float32')", 49e-6, 50.5e-6),  # 3%: not close
        _row("Square.track_graph('square-torch', '64x64', 'float32')", 1.0e-6, 1.01e-6),  # graph: close at any size
        # launch-bound (3 samples, one per process): judged by A's interval, not by 2%
        _row("Square.time_warm('square-torch', '64x64', 'float32')", 2.0e-6, 2.15e-6, interval=(1.8e-6, 2.2e-6),
             samples=3),
        _row("FirstCall.time_first_call('square-numba-flat')", 0.20, 0.26, interval=(0.15, 0.25), samples=3),
    ]
    c = compare.rerun_criteria(rows)
    assert c["flagged"] == 0
    assert (c["long"]["benchmarks"], c["long"]["passing"]) == (2, 1)  # warm and cold of 20 us or more
    assert (c["graph"]["benchmarks"], c["graph"]["passing"]) == (1, 1)
    assert (c["per_process"]["benchmarks"], c["per_process"]["passing"]) == (2, 1)  # the first call fell outside
    assert not c["passed"]
    rows[1]["b"], rows[4]["b"] = 49.2e-6, 0.21
    rows[1]["ratio"], rows[4]["ratio"] = 49.2 / 49, 0.21 / 0.20
    assert compare.rerun_criteria(rows)["passed"]
    rows[0]["mark"] = "+"
    c = compare.rerun_criteria(rows)
    assert not c["passed"] and c["flagged_by_mode"] == {"warm": 1}  # anything flagged fails, whatever the shares
    # host mode's launch-bound cases (one value per process, version 2) are judged by A's interval too
    rows.append(_row("Square.track_host('square-torch', '64x64', 'float32')", 9.0e-6, 9.6e-6,
                     interval=(8.0e-6, 10.0e-6), samples=3))
    rows.append(_row("Square.track_host('square-torch', '16384x16384', 'float32')", 713e-6, 714e-6, samples=10))
    assert compare.rerun_criteria(rows)["per_process"]["benchmarks"] == 3
    # ... and its cases sampled in one process (the GPU's time sets them) are held to 2%, as warm and cold are
    long = compare.rerun_criteria(rows)["long"]
    assert (long["benchmarks"], long["passing"]) == (3, 3)
    rows[-1]["b"], rows[-1]["ratio"] = 740e-6, 740 / 713
    long = compare.rerun_criteria(rows)["long"]
    assert (long["benchmarks"], long["passing"]) == (3, 2)
