"""The phase log a run's benchmark processes write (kernelscope.timing.phases), read back into a run's cost."""

import json

from kernelscope.timing import phases


def test_a_sibling_counts_under_its_own_benchmark_and_not_as_its_hosts_samples(tmp_path, monkeypatch):
    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv(phases.LOG_ENV, str(log))
    monkeypatch.setattr(phases, "_case", None)
    assert phases.begin("Square", ["square-torch", "64x64", "float32"])
    with phases.phase("gate"):
        pass
    phases.setup_done()
    phases.sample_done()  # the host's (time_warm's) last sample
    with phases.sibling("benchmarks.Square.track_cold-17"):
        assert not phases.begin("Square", ["square-torch", "64x64", "float32"])  # the sibling's setup: same case
        phases.method("track_cold")  # its body names itself: ignored, the process stays time_warm's
        phases.sample_done()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["setup", "sample", "sample", "sibling"]
    (proc,) = phases.read(log)
    assert proc["benchmark"] == "Square.time_warm"
    sibling_s = records[-1]["seconds"]
    assert proc["siblings"] == {"Square.track_cold": sibling_s}
    assert proc["body"] == proc["end"] - proc["setup_end"] - sibling_s
    summary = phases.summarize([proc])
    assert summary["phases_s"]["siblings"] == sibling_s
    cold = summary["benchmarks"]["Square.track_cold"]
    assert cold["processes"] == 0 and cold["in_other_processes"] == 1 and cold["seconds"] == sibling_s
    assert summary["benchmarks"]["Square.time_warm"]["processes"] == 1



def test_asv_processes_case_records_are_read_apart_from_the_benchmark_processes(tmp_path, monkeypatch):
    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv(phases.LOG_ENV, str(log))
    monkeypatch.setattr(phases, "_case", None)
    phases.parent_case("benchmarks.Square.time_warm", 3, 100.0, 2.5, 0.25, 0.125)
    assert phases.begin("Square", ["square-torch", "64x64", "float32"])
    phases.setup_done()
    phases.sample_done()
    phases.parent_case("benchmarks.Square.time_warm", 4, 90.0, 1.0, 0.5, 0.0)
    (proc,) = phases.read(log)  # asv's own records are not a benchmark process
    assert proc["class"] == "Square"
    cases = phases.parent_cases(log)
    assert [(c["index"], c["ran_s"], c["saved_s"], c["lock_wait_s"]) for c in cases] == [(4, 1.0, 0.5, 0.0),
                                                                                      (3, 2.5, 0.25, 0.125)]
