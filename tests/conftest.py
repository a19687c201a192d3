import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs two test processes on two cores (pytest-xdist): one thread each, and so every process their
    # tests start, where torch's default (a thread a core) would have them contend. Set before torch starts.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Inductor compiles its C++ in the test process, not in a pool of compile workers it would start in each
    # test process: on two busy cores the pool's start-up costs more than it saves (about 15 s of a run).
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

from kernelscope import backends  # noqa: E402

# Without a GPU, Triton and Numba kernels run under their CPU interpreters.
backends.configure_interpreters()

DEVICE = backends.default_device()


# The longest tests and groups of tests (xdist_group) first: in `make test`'s two processes (pytest-xdist, which
# hands the tests out in this order with --no-loadscope-reorder) none is then started last with the other process
# idle. Node id prefixes; the others keep their order after them. The third is short: pytest-xdist queues one more
# unit behind the first, which would wait the first's minutes.
LONGEST_FIRST = (
    "tests/test_canary.py::test_asv_continuous_exits_1",  # asv continuous, six rounds of two commits
    "tests/test_asv_pipeline.py",  # ten asv runs in turns, then a run cut off and resumed
    "tests/test_asv_hooks.py::test_the_installed_asv_has_every_listed_name",
    "tests/test_variants.py::test_variant_matches_reference_on_cpu_path[mean-triton-lecture-",  # one load a step
    "tests/test_asv_history.py",  # asv over a history of three commits, run and continuous
    "tests/test_variants.py::test_variant_matches_reference_on_cpu_path[softmax-compile-",  # Inductor: a C++
    "tests/test_variants.py::test_variant_matches_reference_on_cpu_path[mean-compile-",  # build a shape and dtype
    "tests/test_site_browser.py",  # two site builds, then Chromium
)


def _longest_first(item) -> int:
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_longest_first)  # stable: the rest in file order
    if backends.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; run `pytest -m gpu` on the GPU box (the CPU "
                                   "counterparts run the same kernels through the interpreters)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The site built once from the committed results (mkdocs build --strict), for every test process of the run:
    with the test fixture's profiles, the one build the browser tests read too."""
    from sitebuild import profiled_site

    return profiled_site(tmp_path_factory)[0]


@pytest.fixture(scope="session")
def committed_site_data():
    """What the site knows of the committed results (SiteData): read once a test process, for every test that
    only reads it."""
    from kernelscope.site.data import SiteData
    from sitebuild import RESULTS, ROOT

    return SiteData(RESULTS, ROOT)
