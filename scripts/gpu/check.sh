#!/usr/bin/env bash
# Check a GPU box: the GPU and the versions, every variant against the float64 reference (kernelscope check),
# and the GPU tests (pytest -m gpu). Installs first (setup.sh). Logs in $OUT (default ./gpu-out):
# versions.txt, check.txt, check.json, pytest-gpu.txt.
#
#   bash scripts/gpu/check.sh
case "${1:-}" in -h|--help) sed -n '2,/^case /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
source scripts/gpu/setup.sh
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton, numba, numba_cuda; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__)"
} 2>&1 | tee "$OUT/versions.txt"
time kernelscope check -q --json-file "$OUT/check.json" 2>&1 | tee "$OUT/check.txt"
time python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest-gpu.txt" | tail -15
