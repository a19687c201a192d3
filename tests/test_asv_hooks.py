"""Every private name of asv the integration uses is listed, checked, and missing ones named (kernelscope.asv.hooks)."""

import pytest

pytest.importorskip("asv")

from kernelscope.asv import hooks  # noqa: E402


def test_the_installed_asv_has_every_listed_name():
    assert hooks.missing() == []
    hooks.require()


def test_an_asv_without_one_stops_with_a_message_that_names_it_and_the_checked_versions(monkeypatch):
    from asv import runner

    monkeypatch.delattr(runner, "_run_benchmark_single_param")
    with pytest.raises(hooks.MissingHook) as caught:
        hooks.require()
    message = str(caught.value)
    assert "asv.runner:_run_benchmark_single_param" in message
    assert "checked on 0.6.6" in message and "pip install -e '.[bench]'" in message
    assert "asv_runner" not in message.split("\n")[0]  # only the package that lacks something
    hooks.require("asv_runner")  # asv_runner's own names are all there


def test_only_a_listed_name_can_be_wrapped_and_each_wrapper_once(monkeypatch):
    from asv import util

    with pytest.raises(KeyError, match="list it there first"):
        hooks.wrap("asv.util:load_json", lambda original: original)
    monkeypatch.setattr(util, "write_json", util.write_json)  # restored after the test
    calls = []

    def counting(original):
        def write_json(*args, **kwargs):
            calls.append(args[0])
            return original(*args, **kwargs)

        return write_json

    hooks.wrap("asv.util:write_json", counting)
    wrapped = util.write_json
    hooks.wrap("asv.util:write_json", counting)
    assert util.write_json is wrapped  # a second wrap by the same maker does nothing


def test_every_hook_names_what_uses_it_and_why():
    for hook in hooks.HOOKS:
        assert hook.package in hooks.CHECKED_ON and hook.used_by and hook.why
