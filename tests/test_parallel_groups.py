"""`make test` runs in two processes (pytest-xdist, --dist loadgroup), where the tests of one group share a
process and so the fixtures it builds once: an asv run, a site build, an nvcc compile. A pytest or xdist that
drops the group marks splits them silently, and each process builds them again: this fails instead."""

import pytest


@pytest.mark.xdist_group("group-check")
def test_the_group_mark_reaches_the_scheduler(request):
    main_argv = getattr(request.config, "workerinput", {}).get("mainargv", [])  # a worker's own --dist is "no"
    if not any(arg.endswith("loadgroup") for arg in main_argv):
        pytest.skip("checks the grouping of `make test`'s processes (pytest -n 2 --dist loadgroup)")
    assert request.node.nodeid.endswith("@group-check"), (
        f"{request.node.nodeid}: the xdist_group mark was dropped (pytest {pytest.__version__}); "
        "see the pytest pin in pyproject.toml")
