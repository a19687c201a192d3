#!/usr/bin/env bash
# On the GPU box: versions, every variant checked, the GPU tests.
# Usage: bash scripts/gpu/check.sh   (logs under $OUT)
source scripts/gpu/setup.sh
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, triton, numba, numba_cuda; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__)"
} 2>&1 | tee "$OUT/versions.txt"
time kernelscope check -q --json-file "$OUT/check.json" 2>&1 | tee "$OUT/check.txt"
time python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest-gpu.txt" | tail -15
