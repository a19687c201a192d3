"""The correctness harness catches what it must: no test here can pass a wrong kernel."""

import dataclasses
import math

import pytest
import torch

from kernelscope.catalog import OPS, Variant
from kernelscope.check import FAIL, PASS, SKIP, check_variant, error_against_reference, relative_error

HERE = "test_check_harness"


def skips_last_element(x, out):
    out.view(-1)[:-1] = (x * x).view(-1)[:-1]  # the last element keeps its poison
    return out


def off_by_one_row(x, out):
    out.copy_(torch.roll(x * x, 1, dims=0))
    return out


def slightly_wrong(x):
    return x * x * (1 + 1e-3)


def returns_new_buffer(x, out):
    return x * x


def raises(x):
    raise RuntimeError("kernel exploded")


def fake(impl, takes_out=False, dtypes=("float32",)):
    return Variant(f"square-fake-{impl}", "square", "torch", "a broken kernel", f"{HERE}:{impl}",
                   dtypes=dtypes, takes_out=takes_out)


@pytest.mark.parametrize("impl,takes_out", [
    ("skips_last_element", True), ("off_by_one_row", True), ("slightly_wrong", False),
    ("returns_new_buffer", True), ("raises", False),
])
def test_broken_kernels_fail(impl, takes_out):
    res = check_variant(fake(impl, takes_out), device="cpu")
    assert res.status == FAIL
    assert res.reason


def test_unwritten_element_reads_nan():
    res = check_variant(fake("skips_last_element", True), device="cpu", shapes=((4, 4),), seed=1)
    assert math.isnan(res.max_rel_err)


def test_correct_kernel_passes_and_seeds_are_fresh():
    ok = Variant("square-fake-ok", "square", "torch", "ok", "kernelscope.backends.torch_ops:square")
    a, b = check_variant(ok, device="cpu"), check_variant(ok, device="cpu")
    assert a.status == b.status == PASS
    assert a.shapes[0].seed != b.shapes[0].seed


def test_unavailable_device_is_a_skip_with_reason():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    ok = Variant("square-fake-ok", "square", "torch", "ok", "kernelscope.backends.torch_ops:square")
    res = check_variant(ok, device="cuda")
    assert res.status == SKIP and "no CUDA GPU" in res.reason


def test_relative_error_is_a_max_norm():
    ref = torch.ones(1000, dtype=torch.float64)
    out = ref.clone()
    out[17] = 1.5
    assert relative_error(out, ref) == pytest.approx(0.5)
    assert math.isnan(relative_error(torch.tensor([float("inf")]), torch.tensor([1.0])))


def test_small_outputs_are_measured_against_the_dtype_and_op_scale():
    # CI once failed gelu-formula on a single bfloat16 element near x = -3: the
    # formula in bf16 returns 0 there, right to within |x| * 2^-8. Errors of
    # that size pass; an error that is large against the input still fails.
    gelu_op, square_op = OPS["gelu"], OPS["square"]
    x = torch.tensor([[-3.0]], dtype=torch.bfloat16)
    assert error_against_reference(gelu_op, x, torch.zeros_like(x)) <= gelu_op.tolerance["bfloat16"]
    assert error_against_reference(gelu_op, x, torch.full_like(x, -0.1)) > gelu_op.tolerance["bfloat16"]
    # A float16 square below the smallest normal number loses bits, not accuracy.
    x = torch.tensor([[0.005]], dtype=torch.float16)
    assert error_against_reference(square_op, x, x * x) <= square_op.tolerance["float16"]
    assert error_against_reference(square_op, x, x * x * 1.5) > square_op.tolerance["float16"]


def square_rows_fixed_1024(x, out):
    """The lecture's per-row Triton square after "fixing the block size to 1024": columns past 1024 are never written."""
    from kernelscope.backends.triton.square import square_row_kernel

    square_row_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK_SIZE=1024)
    return out


def test_the_lectures_fixed_1024_block_per_row_fails_on_rows_wider_than_1024():
    v = Variant("square-fake-fixed1024", "square", "triton", "the lecture's fixed block", f"{HERE}:square_rows_fixed_1024",
                dtypes=("float32",), takes_out=True)
    narrow = check_variant(v, device="cpu", shapes=((13, 17), (2, 1024)), stress=False)
    assert narrow.status == PASS  # correct wherever a row fits the block, which is why it slipped through
    wide = check_variant(v, device="cpu", shapes=((31, 1031), (3, 4099)))
    assert wide.status == FAIL and math.isnan(wide.max_rel_err)  # the unwritten columns keep their NaN poison


def sum_then_divide(x):
    return x.sum() / x.numel()  # the sum is rounded to x's dtype before the divide


def mean_fake(limits=()):
    return Variant("mean-fake-sum-div", "mean", "torch", "sum, then divide", f"{HERE}:sum_then_divide",
                   dtypes=("float32", "float16"), limits=limits)


def test_an_undeclared_stress_failure_fails_the_check_and_names_the_input():
    res = check_variant(mean_fake(), device="cpu")
    assert res.status == FAIL
    assert "stress input offset" in res.reason and "float16" in res.reason and "float32" not in res.reason
    random_inputs = [s for s in res.shapes if s.input == "random"]
    assert random_inputs and all(s.ok for s in random_inputs)  # well-scaled random inputs never showed it


def test_a_declared_limit_is_reported_not_failed_and_covers_only_what_it_names():
    from kernelscope.catalog import Limit

    both = (Limit("offset", ("float16",), "sum overflows"), Limit("long", ("float16",), "sum overflows"))
    res = check_variant(mean_fake(both), device="cpu")
    assert res.status == PASS and set(res.known) == {"offset float16", "long float16"}
    assert res.max_rel_err < 1e-2  # the known failures are reported, not folded into the error
    res = check_variant(mean_fake(both[1:]), device="cpu")
    assert res.status == FAIL and "stress input offset" in res.reason and res.known == ["long float16"]


def test_a_small_gpu_inputs_reference_is_computed_on_the_cpu_and_a_large_ones_where_it_lives(monkeypatch):
    # The CPU side of the rule (HOST_REFERENCE_NUMEL): a tensor said to be on a GPU is copied to the host
    # when small; the GPU test checks that both places give the same error on real GPU tensors.
    from kernelscope import check

    copied = []
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(torch.Tensor, "cpu", lambda self: copied.append(self.numel()) or self)
    op = OPS["square"]
    for n in (64, check.HOST_REFERENCE_NUMEL, check.HOST_REFERENCE_NUMEL + 1):
        x = torch.randn(n)
        assert check.error_against_reference(op, x, x * x) < 1e-6
    assert copied == [64, check.HOST_REFERENCE_NUMEL]


@pytest.mark.parametrize("op, shape, wrong_at", [("square", (37, 53), (36, 52)), ("gelu", (37, 53), (0, 0)),
                                                 ("softmax", (37, 53), (20, 7)), ("mean", (37 * 53,), None)])
def test_a_reference_taken_in_chunks_gives_the_whole_ones_error(monkeypatch, op, shape, wrong_at):
    import kernelscope.check as check

    spec = OPS[op]
    x = spec.make_input(shape, "float32", "cpu", 5)
    out = spec.reference(x.double()).float()
    if wrong_at is None:
        out = out * (1 + 3e-4)
    else:
        out[wrong_at] += 0.25  # one element wrong, in the last chunk for square
    whole = error_against_reference(spec, x, out)
    monkeypatch.setattr(check, "CHUNKED_REFERENCE_NUMEL", 200)  # chunks of a few rows (or 200 values)
    chunked = error_against_reference(spec, x, out)
    assert whole > spec.tolerance["float32"] and chunked == pytest.approx(whole, rel=1e-9)
    out[wrong_at or ()] = float("nan")
    assert math.isnan(error_against_reference(spec, x, out))


def test_a_gpu_only_stress_input_is_listed_as_not_run_on_the_cpu_and_checked_in_its_dtypes_alone(monkeypatch):
    from kernelscope import check
    from kernelscope.ops import Stress

    made = []

    def make(shape, dtype, device, seed):
        made.append((shape, dtype))
        return OPS["square"].make_input(shape, dtype, device, seed)

    huge = Stress("huge", "too large for the CPU path", (5, 6), make, gpu_only=True)
    one_dtype = Stress("one-dtype", "checked in float16 alone", (4, 9), make, dtypes=("float16",))
    monkeypatch.setitem(OPS, "square", dataclasses.replace(OPS["square"], stress=(huge, one_dtype)))
    right = Variant("square-fake-right", "square", "torch", "a right kernel", "kernelscope.backends.torch_ops:square",
                    dtypes=("float32", "float16"))
    res = check.check_variant(right, device="cpu")
    assert res.status == PASS and "checked on a GPU only: huge 5x6" in res.not_run
    assert made == [((4, 9), "float16")]
    assert [(s.input, s.dtype) for s in res.shapes if s.input != "random"] == [("one-dtype", "float16")]


@pytest.mark.parametrize("impl", ["slightly_wrong", "raises"])
def test_the_backend_gives_back_what_its_framework_kept_after_the_variants_cases(monkeypatch, impl):
    """After a variant's last case (passed, failed or crashed), its backend's release runs, once: a compile
    variant's CUDA graph pools would otherwise hold a 2^31-element input's memory against the next variant."""
    from kernelscope import backends

    released = []
    torch_backend = backends.BACKENDS["torch"]
    monkeypatch.setitem(backends.BACKENDS, "torch",
                        dataclasses.replace(torch_backend, release=lambda: released.append(len(cases_run))))
    cases_run = []
    monkeypatch.setattr("kernelscope.check.check_case", lambda *a, **k: cases_run.append(a) or _raise_or(impl, a))
    res = check_variant(fake(impl), device="cpu", seed=1)
    assert res.status == FAIL and released == [len(cases_run)] and len(cases_run) > 1


def _raise_or(impl, args):
    if impl == "raises":
        raise RuntimeError("kernel exploded")
    from kernelscope.check import ShapeResult
    return ShapeResult("1x1", args[2], 1.0, 1e-6, args[4], False)


def test_torch_compiles_release_shuts_its_cuda_graph_trees_down(monkeypatch):
    import torch._inductor.cudagraph_trees as trees

    from kernelscope import backends

    shut = []
    monkeypatch.setattr(trees, "reset_cudagraph_trees", lambda: shut.append(True))
    backends.BACKENDS["torch-compile"].release()
    assert shut == [True]


@pytest.mark.gpu
def test_gpu_a_reduce_overhead_variants_check_leaves_no_graph_pool_behind():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelscope.catalog import get

    variant = get("square-compile-cudagraphs")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    res = check_variant(variant, device="cuda", shapes=((8192, 8192),), stress=False)
    assert res.status == PASS
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() - before < 2**20  # the graph's 256 MiB input copy and output are gone
