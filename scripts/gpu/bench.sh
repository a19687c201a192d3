#!/usr/bin/env bash
# Benchmark a GPU box: install, record the machine, check every variant, run the asv suite, profile, and
# collect what they wrote. Run it from the root of a git checkout (asv builds its commits from the
# repository); the results go into the checkout's results/, profiles/ and evidence/, as any asv run's do,
# and each step's log into $STATE.
#
#   bash scripts/gpu/bench.sh                       the default steps, in order
#   STEPS="machine full" bash scripts/gpu/bench.sh  the steps named (in the order below)
#   bash scripts/gpu/bench.sh collect               $OUT/results.tgz and $OUT/logs.tgz, to carry elsewhere
#
# Steps (default: setup machine check prewarm full profile):
#   setup      install: asv from .whl/ if there are wheels (an offline box), this project editable
#              (scripts/gpu/setup.sh)
#   machine    name the machine for asv and measure its copy bandwidth (kernelscope machine: machine.json),
#              and record which GPU this is (gpu-identity.txt: UUID, serial, PCI bus, clocks)
#   check      kernelscope check (every variant against the float64 reference; CHECK_ARGS="--op square"
#              narrows it) and pytest -m gpu (PYTEST_ARGS narrows it; ended after PYTEST_TIMEOUT seconds, 1200,
#              so a kernel that never returns does not hold up the steps after it). It also builds the CUDA
#              extension and warms every compile cache.
#   prewarm    asv run --quick --dry-run -b FirstCall: the first-call caches warm before anything is recorded
#   full       asv run --record-samples HEAD^! into results/ (FULL_ARGS adds asv arguments: "-b Softmax" times
#              those classes only), its output stamped (asv-full.log), every benchmark process's phases logged
#              (asv-full.phases.jsonl), and where the time went (asv-full.cost.txt, scripts/gpu/run_cost.py)
#   profile    kernelscope profile --ncu (PROFILE_ARGS, default --demos) into profiles/<machine>, and Nsight
#              Compute's kernel time beside the warm results (scripts/gpu/profile.sh)
#   crosscheck kernelscope crosscheck (CROSSCHECK_ARGS narrows it): the suite's clocks beside peer timers and
#              ncu, evidence/<machine>/peers.json
#
# STATE: the logs' folder (default /tmp/kernelscope-bench; steps.txt has each step's exit status and seconds).
# OUT: where collect writes (default ./gpu-out). GATE="check": a step named there that fails skips the rest.
# KERNELSCOPE_CACHE: the compile caches, kept across runs (default ~/.cache/kernelscope).
# Back in another checkout: `tar xzf results.tgz`, then `python3 -m kernelscope.results.clock_logs results`
# gzips the new clock logs as they are committed. The site's other evidence is made by scripts/gpu/floors.py
# --kernels (evidence/<machine>/floors.json) and scripts/gpu/canary.sh (evidence/<machine>/canary.json).
set -u
STATE=${STATE:-/tmp/kernelscope-bench}
OUT=${OUT:-$PWD/gpu-out}
export PYTHONUNBUFFERED=1 KERNELSCOPE_CACHE=${KERNELSCOPE_CACHE:-$HOME/.cache/kernelscope}

step() {  # step NAME COMMAND...: run it if STEPS names it, log its exit status and seconds
  local name=$1; shift
  case " ${STEPS:-setup machine check prewarm full profile} " in *" $name "*) ;; *) return 0 ;; esac
  if [ -n "${GATE_FAILED:-}" ]; then echo "=== $name: skipped (step $GATE_FAILED failed)"; return 0; fi
  echo "=== $(date +%T) $name"
  local t0=$SECONDS
  "$@"; local rc=$?
  echo "=== $(date +%T) $name: rc=$rc in $((SECONDS - t0)) s"
  echo "$name rc=$rc seconds=$((SECONDS - t0))" >> "$STATE/steps.txt"
  case " ${GATE:-} " in *" $name "*) [ "$rc" -ne 0 ] && GATE_FAILED=$name ;; esac
  return 0
}

setup() { source scripts/gpu/setup.sh; }

machine() {
  kernelscope machine --json > "$STATE/machine.json" || return
  { nvidia-smi --query-gpu=name,uuid,serial,pci.bus_id --format=csv
    nvidia-smi --query-gpu=persistence_mode,power.limit,clocks.applications.graphics --format=csv; } \
    > "$STATE/gpu-identity.txt" 2>&1
  cat "$STATE/gpu-identity.txt"
}

check() {
  kernelscope check -q ${CHECK_ARGS:-} --json-file "$STATE/check.json" > "$STATE/check.txt" 2>&1
  local rc=$?
  timeout "${PYTEST_TIMEOUT:-1200}" python3 -m pytest -m gpu -q -p no:cacheprovider ${PYTEST_ARGS:-} \
    > "$STATE/pytest-gpu.txt" 2>&1 || rc=$?
  tail -n 3 "$STATE/check.txt" "$STATE/pytest-gpu.txt"
  return "$rc"
}

logged() {  # logged NAME ASV-ARGS...: asv's output stamped into NAME.log, the processes' phases into
  # NAME.phases.jsonl, and where the time went into NAME.cost.txt
  local name=$1; shift
  KERNELSCOPE_PHASE_LOG=$STATE/$name.phases.jsonl asv "$@" 2>&1 | python3 scripts/gpu/stamp.py > "$STATE/$name.log"
  local rc=${PIPESTATUS[0]}
  python3 scripts/gpu/run_cost.py "$STATE/$name.log" "$STATE/$name.phases.jsonl" --json "$STATE/$name.cost.json" \
    > "$STATE/$name.cost.txt" 2>&1 && head -n 14 "$STATE/$name.cost.txt"
  return "$rc"
}

machine_name() {  # the machine as asv names it: from the machine step, else from kernelscope machine
  python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['machine'])" "$STATE/machine.json" 2>/dev/null \
    || kernelscope machine --dry-run --no-bandwidth --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["machine"])'
}

steps() {
  mkdir -p "$STATE" && : > "$STATE/steps.txt"
  step setup setup
  step machine machine
  M=$(machine_name) || { echo "bench.sh: no machine name (kernelscope machine failed)" >&2; exit 1; }
  export KERNELSCOPE_MACHINE=$M  # the clock logs go beside asv's results for this machine
  step check check
  step prewarm sh -c "asv run --quick --dry-run --machine $M -b FirstCall HEAD^! > $STATE/asv-prewarm.log 2>&1"
  step full logged asv-full run --record-samples --machine "$M" --show-stderr ${FULL_ARGS:-} HEAD^!
  step profile env OUT="$STATE" bash scripts/gpu/profile.sh ${PROFILE_ARGS:---demos}
  step crosscheck sh -c "kernelscope crosscheck ${CROSSCHECK_ARGS:-} > $STATE/peers.txt 2> $STATE/peers.log;
    rc=\$?; tail -n 25 $STATE/peers.txt; exit \$rc"
  echo "=== done: $STATE/steps.txt"; cat "$STATE/steps.txt"
}

case "${1:-}" in
  "") steps ;;
  collect)  # what the steps wrote, to carry to another checkout
    mkdir -p "$OUT"
    tar czf "$OUT/results.tgz" results $(ls -d evidence profiles 2>/dev/null)
    tar czf "$OUT/logs.tgz" -C "$STATE" --exclude="*.tgz" .
    ls -l "$OUT" ;;
  -h|--help) sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' ;;
  *) sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
