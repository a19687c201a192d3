# Source this on the offline GPU box: installs asv from wheels carried in .whl/
# (fetch them here with scripts/gpu/fetch-wheels) and this project, using the
# box's own torch, triton and numba.
set -e
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check .whl/*.whl
fi
$PY -m pip install -q --no-index --no-deps --no-build-isolation --disable-pip-version-check -e .
# Compile caches live across runs of one session (torch.compile, Triton, the CUDA extension).
export KERNELSCOPE_CACHE=${KERNELSCOPE_CACHE:-$HOME/.cache/kernelscope}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
set +e
