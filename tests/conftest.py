import pytest

from kernelscope import backends

# Without a GPU, Triton and Numba kernels run under their CPU interpreters.
backends.configure_interpreters()

DEVICE = backends.default_device()


def pytest_collection_modifyitems(config, items):
    if backends.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; run `pytest -m gpu` on the GPU box (the CPU "
                                   "counterparts run the same kernels through the interpreters)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The site built once from the committed results (mkdocs build --strict)."""
    from sitebuild import build

    return build(tmp_path_factory.mktemp("site") / "site")
