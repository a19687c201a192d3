# Host cost a call, the tree before the fixed launches (OLD: a checkout's src/ at e0fed0b) and after (this
# checkout's src/, 013abc2), in turns on one GPU box; then the GPU tests of the direct launch paths.
#   bash host_ab.sh OLD_SRC OUT_DIR
set -u
OLD=$1; OUT=$2; NEW=$(pwd)/src; mkdir -p "$OUT"
x() { PYTHONPATH=$1 timeout 60 python3 -m kernelscope crosscheck --variant $2 --size $3 --dtype float32 --no-ncu \
      --out "$OUT/cross-$4-$2-$3.json" 2>&1 | grep "^\[1/1\]" | sed "s/^/$4 /"; }
for r in 1 2; do
  x "$OLD" softmax-numba 64x64 old; x "$NEW" softmax-numba 64x64 new
  x "$OLD" mean-numba 4096 old; x "$NEW" mean-numba 4096 new
done
x "$NEW" softmax-torch 64x64 new; x "$NEW" mean-torch 4096 new; x "$NEW" mean-numba 16777216 new
PYTHONPATH=$NEW timeout 120 python3 -m pytest -q -m gpu tests/test_numba_direct.py -p no:cacheprovider 2>&1 | tail -n 2
