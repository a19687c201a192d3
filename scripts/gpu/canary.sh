#!/usr/bin/env bash
# Is an injected slowdown caught? Run in a git checkout of
# kernelscope on the GPU box, with asv installed and a machine named for asv:
#
#   [MACHINE=name] [BENCH=Square.time_warm] [LEVELS="0.10 0.20"] [VARIANT=square-triton-flat1024] \
#     [FACTOR=1.05] bash scripts/gpu/canary.sh [OUTDIR]       # OUTDIR: default $OUT, else /tmp/kernelscope-canary
#
# Per level, a commit on top of HEAD whose only change is kernelscope.slowdown.INJECT
# = VARIANT:LEVEL (its kernel does that fraction more work), on the throwaway
# branch kernelscope-canary/<percent>; then `asv continuous -b BENCH HEAD <that
# commit>` (which records samples by default: asv 0.6 has only --no-record-samples)
# into OUTDIR/results-<percent>, its output in OUTDIR/continuous-<percent>.log and
# its exit status kept (1: something got slower). Ends with
# evidence/<MACHINE>/canary.json (python -m kernelscope.evidence.canary write; a
# copy in OUTDIR) and the detection table. The checkout's files, index and HEAD are
# never touched (the commits are made with git plumbing); the branches and asv
# configs it made are removed on exit. MACHINE defaults to the only machine in
# ~/.asv-machine.json. BENCH="Square.time_warm.*'(square-torch|square-triton-flat1024|square-cuda-vec4)'" is 18
# cases, 72 benchmark processes a level (launch-bound cases alone in three processes).
case "${1:-}" in -h|--help) sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
set -u
cd "$(git rev-parse --show-toplevel)" || exit 2
PY=${PYTHON:-python3}
ASV=${ASV:-asv}
out=${1:-${OUT:-/tmp/kernelscope-canary}}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
bench=${BENCH:-Square.time_warm}
variant=${VARIANT:-square-triton-flat1024}
levels=${LEVELS:-0.10 0.20}
# asv's default factor, 1.1, can never flag a 10% slowdown: the H100's +10% canary read 1.0996
# at 2^28 elements (results-proofs/slowdown-canary). 1.05 asks whether the gate sees it.
FACTOR=${FACTOR-1.05}
# The checkout's own code makes the commits and reads the results, installed or not.
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
machine=${MACHINE:-$($PY -c '
import json, os, sys
names = [k for k in json.load(open(os.path.expanduser("~/.asv-machine.json"))) if k != "version"]
print(names[0]) if len(names) == 1 else sys.exit(f"canary.sh: {len(names)} machines in ~/.asv-machine.json ({names}): set MACHINE=")
')} || exit 2
[ -n "$machine" ] || { echo "canary.sh: no machine: set MACHINE= or run kernelscope machine" >&2; exit 2; }
export KERNELSCOPE_MACHINE=$machine  # the clock logs go beside the results of this machine
unset KERNELSCOPE_INJECT_SLOWDOWN    # it would override the commits' INJECT on both sides

head=$(git rev-parse --verify HEAD) || exit 2
where=$(git symbolic-ref -q --short HEAD || echo "$head")
made=()
cleanup() {
  for b in "${made[@]}"; do git branch -q -D "$b" >/dev/null 2>&1; rm -f "asv.results-canary-${b##*/}.json"; done
  [ "$(git rev-parse HEAD)" = "$head" ] || echo "canary.sh: HEAD moved from $head (it never moves it)" >&2
}
trap cleanup EXIT
echo "canary.sh: $variant at $levels over '$bench' on $machine, base $where ($head); output in $out"

args=()
for level in $levels; do
  pct=$($PY -c "from fractions import Fraction; print(f'{float(Fraction(\"$level\") * 100):g}')") || exit 2
  branch=kernelscope-canary/$pct
  commit=$($PY -m kernelscope.evidence.canary commit "$variant:$level" --base "$head" --branch "$branch") || exit 2
  made+=("$branch")
  $PY scripts/asv-config-with-results "$out/results-$pct" "asv.results-canary-$pct.json" || exit 2
  cmd=("$ASV" continuous --config "asv.results-canary-$pct.json" --machine "$machine" -b "$bench"
       ${FACTOR:+--factor "$FACTOR"} "$head" "$commit")
  echo "=== $(date +%T) +$pct%: ${cmd[*]}"
  t0=$(date +%s)
  "${cmd[@]}" > "$out/continuous-$pct.log" 2>&1
  rc=$?
  echo "=== $(date +%T) +$pct%: exit $rc in $(( $(date +%s) - t0 )) s"
  sed -n '/Change/,$p' "$out/continuous-$pct.log" | tail -n 25
  echo "$rc" > "$out/continuous-$pct.rc"
  quoted=$(printf '%q ' "${cmd[@]}")
  args+=(--level "$variant:$level" "$commit" "$out/results-$pct" "$rc" "${quoted% }")
done

evidence=evidence/$machine/canary.json
$PY -m kernelscope.evidence.canary write "$evidence" --machine "$machine" --base "$head" ${FACTOR:+--factor "$FACTOR"} \
  --command "$(printf '%q=%q ' MACHINE "$machine" BENCH "$bench" LEVELS "$levels" VARIANT "$variant" FACTOR "${FACTOR:-}")bash scripts/gpu/canary.sh $(printf '%q' "$out")" \
  "${args[@]}" || exit 2
cp "$evidence" "$out/canary.json"
echo "canary.sh: wrote $evidence (and $out/canary.json)"
