# Set up a GPU box for kernelscope. Source it from the repository root:
#
#   source scripts/gpu/setup.sh
#
# Installs this project (editable, no build isolation) over the box's own torch, triton and numba, and first
# asv and its pure-Python needs from the wheels in .whl/ when there are any: an offline box gets them from a
# machine with network access (scripts/gpu/fetch-wheels there, then .whl/ copied with the repository).
# Exports KERNELSCOPE_CACHE (the compile caches, default ~/.cache/kernelscope) and sets OUT (where check.sh
# and profile.sh write their logs, default ./gpu-out). PY: the Python to install into (default python3).
set -e
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check .whl/*.whl
fi
$PY -m pip install -q --no-index --no-deps --no-build-isolation --disable-pip-version-check -e .
# Compile caches live across runs (torch.compile, Triton, the CUDA extension).
export KERNELSCOPE_CACHE=${KERNELSCOPE_CACHE:-$HOME/.cache/kernelscope}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
set +e
