#!/usr/bin/env bash
# Profiling artifacts of every GPU variant, on a GPU box: torch.profiler, the compiled code, Nsight Compute over
# the variants in one process, and the lecture's demos, into profiles/<machine>/; then the folder as one tarball
# in $OUT, to carry to another checkout.
#
#   bash scripts/gpu/profile.sh [ARGS...]     (kernelscope installed: pip install -e '.[bench]', or setup.sh)
#
# ARGS go to `kernelscope profile --ncu` (default: --demos, every variant). A part at a time into the same
# folder works too: `profile.sh --op square --demos`, then `profile.sh --op mean` ... (each run refreshes its
# own variants; the manifest lists every variant present). PROFILES_ROOT: the profiles folder (default: profiles).
#
# $OUT (default ./gpu-out) gets profile.jsonl (one record per variant), profile.log (progress, errors),
# crosscheck.txt (ncu's kernel time against the newest warm results in results/) and profiles-<machine>.tgz.
# In another checkout:
#   tar xzf profiles-<machine>.tgz -C profiles && kernelscope profile --cross-check
case "${1:-}" in -h|--help) sed -n '2,/^case /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/gpu-out}
ROOT=${PROFILES_ROOT:-profiles}
[ $# -gt 0 ] || set -- --demos
mkdir -p "$OUT" "$ROOT"
# The machine as asv names it (kernelscope machine), so profiles/<machine> sits beside results/<machine>.
M=${KERNELSCOPE_MACHINE:-$(kernelscope machine --dry-run --no-bandwidth --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["machine"])')}
export KERNELSCOPE_MACHINE=$M
command -v ncu >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
kernelscope profile --ncu --out "$ROOT/$M" --json "$@" >> "$OUT/profile.jsonl" 2>> "$OUT/profile.log"
rc=$?
echo "kernelscope profile: rc=$rc in $(( $(date +%s) - t0 )) s"
grep -v '^USDT' "$OUT/profile.log" | tail -n 12
kernelscope profile --cross-check --profiles-dir "$ROOT/$M" > "$OUT/crosscheck.txt" 2>&1
tail -n 3 "$OUT/crosscheck.txt"
tar czf "$OUT/profiles-$M.tgz" -C "$ROOT" "$M"
ls -l "$OUT"
exit $rc
