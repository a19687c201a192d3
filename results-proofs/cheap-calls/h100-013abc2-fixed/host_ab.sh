# host cost a call, the tree before the fixed launches (old) and after (new), same box; then the GPU tests
set -u
SRC=$(pwd); mkdir -p $OUT /tmp/old && tar xzf .carry/old-src.tgz -C /tmp/old
export PYTHONUNBUFFERED=1 KERNELSCOPE_CACHE=/tmp/kc
python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check "$SRC"/.whl/*.whl > /dev/null 2>&1
nvidia-smi -L
x() { PYTHONPATH=$1 timeout 60 python3 -m kernelscope crosscheck --variant $2 --size $3 --dtype float32 --no-ncu \
      --out $OUT/cross-$4-$2-$3.json 2>&1 | grep "^\[1/1\]" | sed "s/^/$4 /"; }
for r in 1 2; do
  x /tmp/old/src softmax-numba 64x64 old; x $SRC/src softmax-numba 64x64 new
  x /tmp/old/src mean-numba 4096 old; x $SRC/src mean-numba 4096 new
done
x $SRC/src softmax-torch 64x64 new; x $SRC/src mean-torch 4096 new; x $SRC/src mean-numba 16777216 new
PYTHONPATH=$SRC/src timeout 120 python3 -m pytest -q -m gpu tests/test_numba_direct.py -p no:cacheprovider 2>&1 | tail -n 2
