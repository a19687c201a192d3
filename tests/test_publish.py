"""asv publish on the committed results: one graph per benchmark and machine, and regressions that are real
changes, while an injected 20% slowdown of a kernel and of a host-side call path is still listed."""

import copy
import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sitebuild import newest_result_file
from test_asv_pipeline import ASV, ROOT

pytestmark = [pytest.mark.skipif(ASV is None or not (ROOT / ".git").exists() or not (ROOT / "results").is_dir(),
                                 reason="needs asv, the git history and the committed results"),
              pytest.mark.xdist_group("asv-publish")]  # one test process publishes `published` once
H100 = "nvidia-h100-80gb-hbm3"
CODE = ["src/kernelscope/backends", "src/kernelscope/ops", "src/kernelscope/catalog.py", "src/kernelscope/timing",
        "src/kernelscope/asv"]


def _publish(tmp: Path, results: Path) -> tuple[dict, dict, Path]:
    from asv import util

    conf = util.load_json(str(ROOT / "asv.conf.json"), js_comments=True)
    # HEAD, not main: a CI checkout may have no local branch of that name; HEAD's history holds every commit
    conf.update(repo=str(ROOT), results_dir=str(results), html_dir=str(tmp / "html"), env_dir=str(tmp / "env"),
                benchmark_dir=str(ROOT / "benchmarks"), branches=["HEAD"])
    config = tmp / "asv.json"
    config.write_text(json.dumps(conf))
    if not (tmp / "src").exists():
        (tmp / "src").symlink_to(ROOT / "src")
    proc = subprocess.run([ASV, "publish", "--config", str(config)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = tmp / "html"
    return json.loads((html / "regressions.json").read_text()), json.loads((html / "index.json").read_text()), html


def _code_changed(a: str, b: str) -> bool:
    return subprocess.run(["git", "diff", "--quiet", a, b, "--", *CODE], cwd=ROOT).returncode == 1


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("publish")
    shutil.copytree(ROOT / "results", tmp / "results")
    return (*_publish(tmp, tmp / "results"), tmp)


def test_one_graph_per_benchmark_and_machine(published):
    _, index, html, _ = published
    machines = set(index["params"]["machine"])
    graphs = [p for p in html.glob("graphs/**/benchmarks.Softmax.time_warm.json") if "summary" not in p.parts]
    assert len(graphs) == len(machines) == 2, [str(g.relative_to(html)) for g in graphs]


def test_every_regression_listed_spans_a_change_of_the_code(published):
    regressions, index, _, _ = published
    commit = index["revision_to_hash"]
    for name, _, params, *_, jumps in regressions["regressions"]:
        for before, after, *_ in jumps:
            assert _code_changed(commit[str(before)], commit[str(after)]), (name, params["machine"], before, after)


def _newest_h100_run(results: Path) -> tuple[Path, dict]:
    """The newest H100 run its results pages show (a run of one variant after it is not one of them)."""
    path = newest_result_file(results, H100)
    return path, json.loads(path.read_text())


LAUNCH_BOUND_SIZES = ("'64x64'", "'256x256'", "'1024x1024'", "'4096'", "'65536'", "'1048576'")


def _as_commit(data: dict, commit: str, box: str, factor_of) -> dict:
    """``data`` as a run of ``commit`` on ``box``, each case ``factor_of(benchmark, case index, its parameters)``
    times slower (its value, interval and samples)."""
    out = copy.deepcopy(data)
    out["commit_hash"] = commit
    out["date"] = int(subprocess.run(["git", "show", "-s", "--format=%ct", commit], cwd=ROOT, capture_output=True,
                                     text=True).stdout) * 1000
    columns = out["result_columns"]
    for name, row in out["results"].items():
        record = dict(zip(columns, row))
        if name.endswith(("Host.track_host", "FirstCall.time_first_call")):
            record["params"] = [*record["params"][:-1], [repr(box)]]  # one box a run
        for j, combo in enumerate(itertools.product(*record["params"])):
            factor = factor_of(name, j, combo)
            if factor == 1.0:
                continue
            for column in ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75"):
                if record.get(column) and isinstance(record[column][j], float):
                    record[column][j] *= factor
            if record.get("samples") and record["samples"][j]:
                record["samples"][j] = [v * factor for v in record["samples"][j]]
        out["results"][name] = [record.get(c) for c in columns]
    return out


def test_a_change_of_box_is_not_listed_and_a_20_percent_slowdown_on_one_box_is(tmp_path):
    """A history of three runs of the newest H100 results: on box A; on box B, where launch-bound cases read 10%
    slower and host calls 50% slower (what another box of the same GPU reads); on box B again, with one kernel and
    one host call 20% slower. Only the last two are regressions."""
    path, newest = _newest_h100_run(ROOT / "results")
    results = tmp_path / "results"
    (results / H100).mkdir(parents=True)
    for name in ("benchmarks.json", f"{H100}/machine.json"):
        shutil.copy(ROOT / "results" / name, results / name)
    commits = [subprocess.run(["git", "rev-parse", f"HEAD~{n}"], cwd=ROOT, capture_output=True, text=True)
               .stdout.strip() for n in (2, 1, 0)]
    warm = next(n for n in newest["results"] if n.endswith(".time_warm") and "Bfloat16" not in n)
    host = next(n for n in newest["results"] if n.endswith("Host.track_host") and "Bfloat16" not in n)
    slowest = {n: max(range(len(r["result"])), key=lambda j: r["result"][j] or 0)
               for n, r in ((n, dict(zip(newest["result_columns"], newest["results"][n]))) for n in (warm, host))}

    def other_box(name, j, combo):
        if name.endswith("Host.track_host"):
            return 1.5
        return 1.1 if name.endswith((".time_warm", ".track_cold")) and combo[1] in LAUNCH_BOUND_SIZES else 1.0

    def slower(name, j, combo):
        return other_box(name, j, combo) * (1.2 if slowest.get(name) == j else 1.0)

    env = path.name.split("-", 1)[1]
    for commit, box, factor_of in ((commits[0], "box-a", lambda *_: 1.0), (commits[1], "box-b", other_box),
                                   (commits[2], "box-b", slower)):
        (results / H100 / f"{commit[:8]}-{env}").write_text(json.dumps(_as_commit(newest, commit, box, factor_of)))
    bench = json.loads((results / "benchmarks.json").read_text())
    bench[host]["params"][-1] = ["'box-a'", "'box-b'"]  # the boxes asv publish draws
    (results / "benchmarks.json").write_text(json.dumps(bench))
    listed, _, _ = _publish(tmp_path, results)
    new = {entry[0] for entry in listed["regressions"]}
    assert len(new) == 2, sorted(new)
    assert any(n.startswith(warm) for n in new), sorted(new)  # the kernel, 20% slower
    assert any(n.startswith(host) and "'box-b'" in n for n in new), sorted(new)  # the host call, on its own box
