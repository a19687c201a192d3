"""The command line: what a script reading its output relies on."""

import json

from kernelscope.cli import main


def test_check_writes_json_and_the_table_in_one_run(tmp_path, capsys):
    path = tmp_path / "check.json"
    assert main(["check", "--variant", "square-mul", "-q", "--json-file", str(path)]) == 0
    table = capsys.readouterr().out
    assert "square-mul" in table and "1 passed, 0 failed, 0 skipped" in table
    (record,) = json.loads(path.read_text())
    assert (record["variant"], record["backend"], record["status"]) == ("square-mul", "torch", "PASS")
    assert record["max_rel_err"] <= 1e-2 and record["reason"] == ""


def test_check_json_on_stdout_has_the_documented_fields(capsys):
    assert main(["check", "--op", "gelu", "--backend", "torch", "-q", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert {r["variant"] for r in records} == {"gelu-torch", "gelu-formula"}
    assert all({"op", "variant", "backend", "status", "max_rel_err", "reason"} <= set(r) for r in records)


def test_a_failing_variant_makes_check_exit_nonzero(monkeypatch, capsys):
    from kernelscope import catalog

    monkeypatch.setitem(catalog._IMPL_CACHE, catalog.VARIANTS["square-mul"].impl, lambda x: x * x + 1.0)
    assert main(["check", "--variant", "square-mul", "-q"]) == 1
    assert "FAIL" in capsys.readouterr().out
