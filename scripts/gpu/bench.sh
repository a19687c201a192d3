#!/usr/bin/env bash
# A whole benchmark session on an offline GPU box: the full asv run, its
# cross-checks, and the history. Steps run in the background (setsid), so the
# session survives the device tool's 10-minute commands; poll with `wait`.
#
#   bash scripts/gpu/bench.sh start      the repository from .carry/repo (scripts/gpu/carry-repo pack; or a
#                                        .carry/repo.bundle), install, start the steps
#   bash scripts/gpu/bench.sh wait SECS  print progress until done or SECS pass
#   bash scripts/gpu/bench.sh collect    results and logs into $OUT
#   bash scripts/gpu/bench.sh take DIR   here, after a lease: DIR's results.tgz into results/ (the files the lease
#                                        changed from its commit; clock logs gzipped)
#                                        and evidence/, its state.tgz unpacked (printed), its results-rerun into .carry/
#
# Steps, in this order (STEPS="full rerun" runs a subset; a machine goes back
# after 30 minutes, so split a session: STEPS="machine gputests prewarm full rerun",
# then, after committing results/, STEPS="machine slowdown ncu smoke history"):
#   machine   name the machine for asv, record GPU/versions/copy bandwidth
#   gputests  kernelscope check and pytest -m gpu (also builds the CUDA extension into the cache)
#   pytestgpu pytest -m gpu alone (gputests without the check; PYTEST_ARGS="tests/test_x.py" narrows it; ended
#             after PYTEST_TIMEOUT seconds, 1200: a kernel that never returns must not hold the lease; its rc is
#             pytest's, so GATE=pytestgpu skips the later steps when a test fails)
#   check     kernelscope check alone (gputests without pytest: validates, and warms every compile cache;
#             CHECK_ARGS="--op square" narrows it)
#   crosscheck  kernelscope crosscheck: the suite's three modes beside Timer, do_bench, do_bench_cudagraph
#             and ncu on the same callables, every variant and size: evidence/<machine>/peers.json (#13 item 2)
#             (CROSSCHECK_ARGS="--op softmax" narrows it, into evidence/<machine>/peers-op-softmax.json; "--dtype
#             float32 bfloat16" times each case in both)
#   compilechoice scripts/gpu/compile_choice_probe.py: a torch.compile variant (softmax-compile 64x64) compiled in
#             fresh caches several times: the launch config Inductor's autotuning kept each time, and its time
#             (COMPILECHOICE_ARGS="--variant mean-compile --size 4096 --rounds 4" picks another case)
#   tune      scripts/gpu/tune_{triton,cuda,numba}.py: launch-shape sweeps of the tuned kernels (issue #9);
#             TUNE_ARGS=--quick: the first candidates only, which are issue #15's (loop, pipe, regs plans);
#             TUNE_BACKENDS="numba": one script
#   numbaasm  scripts/gpu/numba_asm_probe.py: mean-numba's forms as Numba compiled them (registers, local memory,
#             loads), their PTX into numba-asm/ (#15)
#   profile   kernelscope profile --ncu --demos: torch.profiler, Nsight Compute, compiled code, the
#             lecture's demos, into profiles/<machine> (issue #8); PROFILE_ARGS="--op softmax --shape 8192x8192"
#             in place of --demos narrows it
#   probe     the small-size spread between processes, diagnosed: clock_probe.py (SM clock, settled
#             or not), placement_probe.py (where tensors sit), process_probe.py (streams, code copies, graphs)
#   graphprobe  graph mode at 2^28 elements: suite v3's capture, the fixed one, do_bench_cudagraph (#13)
#   graphpeers  graph mode at 2^28 elements against do_bench_cudagraph: placement_offset_probe.py (output
#             offsets, graph pools), then crosscheck of five variants at 16384x16384 each in a fresh process
#   graphstate  graph mode at 2^28 elements after each step of crosscheck's case (warm, Timer, cold, do_bench),
#             three ways of replaying, beside do_bench_cudagraph: graph_state_probe.py
#   graphcheck graph mode's samples in order after a capture, with and without the settle
#             (graph_state_probe.py --sequence-only), then asv's track_graph at each op's largest
#             size into results-graphcheck/ (#13 item 1)
#   timerprobe host mode against torch.utils.benchmark.Timer on the cases where crosscheck saw them differ:
#             Timer's one block or several, the garbage collector on or off, each call's host time (timer_probe.py, #14)
#   launchab  scripts/gpu/launch_ab_probe.py: each direct launch against its standard path and a torch op, in turns
#             in one process at 64x64: what the direct paths save, which processes' spread hides; then
#             launch_path_probe.py: where each path's host time goes, the direct ones among them (#14 item 3)
#   floors    scripts/gpu/floor_probe.py: a copy (softmax) or a sum (mean) at issue #15's hard cases' own sizes;
#             FLOORS_ARGS="--kernels" adds each wide-row kernel beside itself with free exps (its design's floor)
#   ringstage scripts/gpu/ring_stage_probe.py: the ring kernel's stage sized to a block's slice against rounded to
#             whole vectors a thread (a second build), turn about in one process, beside softmax-cuda's callable
#   widerows  scripts/gpu/wide_rows_probe.py: #15's wide softmax rows, a grid of launch shapes beside the copy at
#             their size, then Nsight Compute's full set on a few (WIDEROWS_ARGS, default "--sweep --ncu")
#   graphsmall scripts/gpu/graph_small_probe.py: graph mode at the smallest size, every tuned variant against an
#             empty kernel's node (#15's 1.3x target), in one process
#   spreadprobe launch-bound cases in 10 forked processes each, per knob, with each process's phase costs (#13)
#   firstcall scripts/gpu/first_call_probe.py: each backend's first call in a forked process, profiled,
#             and with numba.cuda or Triton's driver preloaded in the parent (#13 item 8)
#   cost      a Square subset (64x64 and 16384x16384, every mode) through asv, stamped and phase-logged:
#             where a run's time goes (run_cost.py)
#   smoke     the smoke run (every variant and mode at 64x64 and 4096-sized cases, --quick --dry-run),
#             timed and phase-logged (asv-smoke.cost.txt); it also warms every compile cache
#   prewarm   asv run --quick --dry-run -b FirstCall: first-call caches warm before anything is recorded
#   full      asv run --record-samples HEAD^! into results/ (every benchmark; FULL_ARGS="-b Softmax" times only
#             the classes matched, in a fraction of the time: the site stamps each op with the run it came from)
#   resume    the same for RESUME (a commit, default HEAD) with --skip-existing-successful: what a run
#             cut off (a machine taken back) left to do, into the result file it left in results/
#   cutoff    asv run of the Mean class ended (SIGTERM) CUTOFF_S (5) seconds after asv moved on from its first
#             benchmark (CUTOFF_AFTER, a regex of asv's log; empty: from the start), then resumed with
#             --skip-existing-successful: what the cut-off run had saved, and what the resumed one kept (#13 item 7)
#   graph     the same for graph mode alone (-b track_graph), into results/: a new track_graph version
#   rerun     the full run again for RERUN (a commit with committed results and HEAD's code; default
#             HEAD) into results-rerun (its time is the full run with warm caches), phase-logged,
#             then compare-runs: the noise check, per mode. Run it on the lease that made the full run
#             (STEPS="machine smoke full rerun", about 28 minutes): two leases are two boxes, and their hosts
#             differ (first calls 1.1-1.7x apart on the H100 on 2026-11-25), which host-side modes measure
#   twice     the asv selection TWICE (a -b regex) run into results/ and again into results-rerun on this
#             box, then compare-runs of the two: a same-commit pair for part of the suite (#13 item 3). A full
#             run and its rerun outlast one lease (30 minutes held), so two leases with complementary selections
#             (TWICE="benchmarks\.(Square|Softmax|SquareBfloat16)\." and its complement) make the commit's full
#             run in results/ and the whole rerun criteria, each pair from one box: commit the first lease's
#             results/ before the second, and carry its results-rerun as .carry/results-rerun, which the second
#             lease's rerun adds to (asv loads a commit's stored results before it adds new ones): `take` does
#             both; then commit, rebundle, and start the second lease with TWICE_COMMIT=<the first's commit>
#   slowdown  one variant's warm benchmarks twice, the second with KERNELSCOPE_INJECT_SLOWDOWN
#   canary    scripts/gpu/canary.sh: asv continuous HEAD against canary commits that slow
#             square-triton-flat1024's kernel by 10% and 20%: evidence/<machine>/canary.json (#13 item 4)
#   ncu       warm-mode medians against Nsight Compute kernel durations
#   history   float32 time_warm at two sizes per op for up to HISTORY (4) earlier commits with this
#             warm version that changed a kernel and that results/ does not have yet (or HISTORY_COMMITS),
#             each commit in an asv run of its own (#13 item 5)
set -u
STATE=${STATE:-/tmp/kernelscope-bench}
REPO=$STATE/repo
SRC=$(pwd)

step() {
  local name=$1; shift
  case " ${STEPS:-machine full slowdown history ncu rerun smoke} " in *" $name "*) ;; *) return 0;; esac
  if [ -n "${GATE_FAILED:-}" ]; then echo "=== $name: skipped (gate step $GATE_FAILED failed)"; return 0; fi
  echo "=== $(date +%T) $name: $*"
  local t0=$(date +%s.%N)
  "$@"; local rc=$?
  local dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
  echo "=== $(date +%T) $name: rc=$rc in $dt s"
  # GATE="pytestgpu": a failure of a step named there skips every later step (no suite run of a broken kernel)
  case " ${GATE:-} " in *" $name "*) [ "$rc" -ne 0 ] && GATE_FAILED=$name;; esac
  echo "$name rc=$rc seconds=$dt" >> "$STATE/steps.txt"
}

steps() {
  export PYTHONUNBUFFERED=1 KERNELSCOPE_CACHE=$STATE/cache
  python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check "$SRC"/.whl/*.whl
  if [ -f "$SRC/.carry/repo/history.pack" ]; then  # scripts/gpu/carry-repo pack: HEAD's tree from the copy
    bash "$SRC/scripts/gpu/carry-repo" unpack "$SRC" "$REPO" && cd "$REPO" \
      || { echo "=== ALL DONE (rebuilding the repository failed)"; exit 1; }
  else
    git clone -q -b main "$SRC/.carry/repo.bundle" "$REPO" && cd "$REPO" || { echo "=== ALL DONE (clone failed)"; exit 1; }
  fi
  git config user.email bench@kernelscope && git config user.name bench
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --disable-pip-version-check -e . || { echo "=== ALL DONE (install failed)"; exit 1; }
  local head=$(git rev-parse HEAD)
  echo "$head" > "$STATE/head.txt"  # take copies back only what the lease changed from this commit's files
  # which physical GPU this lease got (two leases of one kind may differ: a rerun compares them)
  step machine sh -c "kernelscope machine --json > $STATE/machine.json; { nvidia-smi --query-gpu=uuid,serial,pci.bus_id --format=csv; nvidia-smi --query-gpu=persistence_mode,power.limit,clocks.applications.graphics --format=csv; } > $STATE/gpu-identity.txt 2>&1; cat $STATE/gpu-identity.txt"
  M=$(python3 -c "import json; print(json.load(open('$STATE/machine.json'))['machine'])")
  export KERNELSCOPE_MACHINE=$M  # the clock logs go beside asv's results for this machine
  alt() {  # an asv config identical to the repo's but for its results folder
    python3 scripts/asv-config-with-results "$STATE/$1" "asv.$1.json"
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
  step gputests sh -c "kernelscope check -q --json-file $STATE/check.json > $STATE/check.txt 2>&1;
    python3 -m pytest -m gpu -q -p no:cacheprovider > $STATE/pytest-gpu.txt 2>&1; tail -n 3 $STATE/check.txt $STATE/pytest-gpu.txt"
  step pytestgpu sh -c "timeout ${PYTEST_TIMEOUT:-1200} python3 -m pytest -m gpu -q -p no:cacheprovider ${PYTEST_ARGS:-} > $STATE/pytest-gpu.txt 2>&1; rc=\$?; tail -n 3 $STATE/pytest-gpu.txt; exit \$rc"
  step check sh -c "kernelscope check -q ${CHECK_ARGS:-} --json-file $STATE/check.json > $STATE/check.txt 2>&1; tail -n 2 $STATE/check.txt"
  step crosscheck sh -c "kernelscope crosscheck ${CROSSCHECK_ARGS:-} > $STATE/peers.txt 2> $STATE/peers.log; echo rc=\$?; tail -n 25 $STATE/peers.txt"
  step compilechoice sh -c "python3 scripts/gpu/compile_choice_probe.py ${COMPILECHOICE_ARGS:-} --json $STATE/compile-choice.json > $STATE/compile-choice.txt 2>&1; echo rc=\$?; cat $STATE/compile-choice.txt"
  step tune sh -c "for b in ${TUNE_BACKENDS:-triton cuda numba}; do echo \"--- \$b\"; timeout 300 python3 scripts/gpu/tune_\$b.py ${TUNE_ARGS:-} --json $STATE/tune_\$b.json > $STATE/tune_\$b.txt 2>&1; echo \"rc=\$?\"; tail -n 4 $STATE/tune_\$b.txt; done"
  step numbaasm sh -c "python3 scripts/gpu/numba_asm_probe.py --out $STATE/numba-asm > $STATE/numba-asm.txt 2>&1; echo rc=\$?; cat $STATE/numba-asm.txt"
  step profile sh -c "kernelscope profile --ncu ${PROFILE_ARGS:---demos} --out $STATE/profiles/$M --json > $STATE/profile.jsonl 2> $STATE/profile.log;
    echo rc=\$?; tail -n 5 $STATE/profile.log; kernelscope profile --cross-check --profiles-dir $STATE/profiles > $STATE/crosscheck.txt 2>&1; tail -n 40 $STATE/crosscheck.txt"
  step probe sh -c "for p in clock placement process; do python3 scripts/gpu/\${p}_probe.py --json $STATE/\$p-probe.json > $STATE/\$p-probe.txt 2>&1; done; tail -n 6 $STATE/*-probe.txt"
  step graphprobe sh -c "python3 scripts/gpu/method_probe.py graph --json $STATE/graph-probe.json > $STATE/graph-probe.txt 2>&1; cat $STATE/graph-probe.txt"
  step graphpeers sh -c "python3 scripts/gpu/placement_offset_probe.py --json $STATE/placement-offset.json > $STATE/placement-offset.txt 2>&1;
    cat $STATE/placement-offset.txt; for v in square-torch square-cuda-vec4 gelu-triton softmax-cuda gelu-numba; do
    kernelscope crosscheck --variant \$v --size 16384x16384 --no-ncu --out $STATE/graphpeers-\$v.json 2>/dev/null | grep \"^\$v \"; done"
  step graphstate sh -c "python3 scripts/gpu/graph_state_probe.py --json $STATE/graph-state.json > $STATE/graph-state.txt 2>&1; cat $STATE/graph-state.txt"
  alt results-graphcheck
  step graphcheck sh -c "python3 scripts/gpu/graph_state_probe.py --sequence-only gelu-triton square-torch softmax-cuda \
      --json $STATE/graph-sequence.json > $STATE/graph-sequence.txt 2>&1; cat $STATE/graph-sequence.txt;
    asv run --config asv.results-graphcheck.json --record-samples --machine $M \
      -b \"track_graph.*'(16384x16384|268435456|64x262144|512x50257)'\" HEAD^! > $STATE/asv-graphcheck.log 2>&1;
    echo asv rc=\$?; grep -E '(16384x16384|268435456|64x262144|512x50257) ' $STATE/asv-graphcheck.log"
  step timerprobe sh -c "python3 scripts/gpu/timer_probe.py --json $STATE/timer-probe.json > $STATE/timer-probe.txt 2>&1; cat $STATE/timer-probe.txt"
  step floors sh -c "timeout 580 python3 scripts/gpu/floor_probe.py ${FLOORS_ARGS:-} --json $STATE/floors.json > $STATE/floors.txt 2>&1; echo rc=\$?; cat $STATE/floors.txt"
  step ringstage sh -c "timeout 400 python3 scripts/gpu/ring_stage_probe.py ${RINGSTAGE_ARGS:-} --json $STATE/ring-stage.json > $STATE/ring-stage.txt 2>&1; echo rc=\$?; cat $STATE/ring-stage.txt"
  step widerows sh -c "mkdir -p $STATE/wide-rows; timeout ${WIDEROWS_TIMEOUT:-600} python3 scripts/gpu/wide_rows_probe.py ${WIDEROWS_ARGS:---sweep --ncu} \
    --out $STATE/wide-rows --json $STATE/wide-rows.json > $STATE/wide-rows.txt 2>&1; echo rc=\$?; cat $STATE/wide-rows.txt"
  step graphsmall sh -c "python3 scripts/gpu/graph_small_probe.py --json $STATE/graph-small.json > $STATE/graph-small.txt 2>&1;
    echo rc=\$?; cat $STATE/graph-small.txt"
  step launchab sh -c "python3 scripts/gpu/launch_ab_probe.py --json $STATE/launch-ab.json > $STATE/launch-ab.txt 2>&1;
    cat $STATE/launch-ab.txt; mkdir -p $STATE/launch-path; python3 scripts/gpu/launch_path_probe.py --out $STATE/launch-path \
    > $STATE/launch-path.txt 2>&1; tail -n 14 $STATE/launch-path.txt"
  step spreadprobe sh -c "python3 scripts/gpu/method_probe.py spread --json $STATE/spread-probe.json > $STATE/spread-probe.txt 2>&1; cat $STATE/spread-probe.txt"
  step firstcall sh -c "python3 scripts/gpu/first_call_probe.py --json $STATE/first-call-probe.json > $STATE/first-call-probe.txt 2>&1; head -n 20 $STATE/first-call-probe.txt"
  alt results-cost
  step cost logged asv-cost run --config asv.results-cost.json --record-samples --machine "$M" \
    -b "Square\..*'(64x64|16384x16384)'" HEAD^!
  alt results-cutoff
  cutoff() {
    local bench="Mean\\." args="--config asv.results-cutoff.json --record-samples --machine $M"
    { CUTOFF_AFTER="${CUTOFF_AFTER-Running \(benchmarks\.Mean\.track_cold}" python3 scripts/gpu/cut_off.py "${CUTOFF_S:-5}" \
        "$STATE/asv-cutoff.log" asv run $args -b "$bench" HEAD^!
      echo "--- saved by the run cut off"; python3 scripts/gpu/saved.py "$STATE/results-cutoff"; } > "$STATE/cutoff.txt"
    asv run $args --skip-existing-successful -b "$bench" HEAD^! > "$STATE/asv-cutoff-resumed.log" 2>&1
    { echo "--- after asv run --skip-existing-successful (rc=$?)"; python3 scripts/gpu/saved.py "$STATE/results-cutoff"; } >> "$STATE/cutoff.txt"
    cat "$STATE/cutoff.txt"
  }
  alt results-smoke  # a dry run saves no results, but its clock logs would land beside them
  step smoke logged asv-smoke run --config asv.results-smoke.json --quick --dry-run --machine "$M" -b "'(64x64|4096)'" HEAD^!
  step prewarm sh -c "asv run --quick --dry-run --machine $M -b FirstCall HEAD^! > $STATE/asv-prewarm.log 2>&1"
  step full logged asv-full run --record-samples --machine "$M" --show-stderr ${FULL_ARGS:-} HEAD^!
  step resume logged asv-resume run --record-samples --skip-existing-successful --machine "$M" --show-stderr \
    "$(git rev-parse "${RESUME:-HEAD}")^!"
  step cutoff cutoff
  step graph logged asv-graph run --record-samples --machine "$M" --show-stderr -b track_graph HEAD^!
  alt results-rerun
  rerun() {  # RERUN: the commit whose committed full run it repeats (default HEAD); its code must be HEAD's
    local c=$(git rev-parse "${RERUN:-HEAD}")
    git diff --quiet "$c" HEAD -- src benchmarks || { echo "rerun: $c's code is not HEAD's"; return 2; }
    logged asv-rerun run --config asv.results-rerun.json --record-samples --machine "$M" --show-stderr "$c^!"
    local rc=$?
    kernelscope compare-runs results "$STATE/results-rerun" --commit "$c" --all > "$STATE/compare-rerun.txt"
    kernelscope compare-runs results "$STATE/results-rerun" --commit "$c" --json > "$STATE/compare-rerun.json"
    tail -n 12 "$STATE/compare-rerun.txt"
    return "$rc"
  }
  step rerun rerun
  twice() {  # TWICE_COMMIT: the commit run twice (default HEAD), so a second lease can run the first lease's
    # commit from a bundle whose HEAD has moved on. asv installs that commit's package in its environment, and
    # the suite is generated from the package; only benchmarks/ (the file that asks for it) is HEAD's
    local c=$(git rev-parse "${TWICE_COMMIT:-HEAD}")
    git diff --quiet "$c" HEAD -- benchmarks || { echo "twice: $c's benchmarks/ is not HEAD's"; return 2; }
    [ -d "$SRC/.carry/results-rerun" ] && mkdir -p "$STATE/results-rerun" && cp -r "$SRC/.carry/results-rerun/." "$STATE/results-rerun/"
    logged asv-twice-a run --record-samples --machine "$M" --show-stderr -b "$TWICE" "$c^!"; echo "run a: rc=$?"
    logged asv-twice-b run --config asv.results-rerun.json --record-samples --machine "$M" --show-stderr \
      -b "$TWICE" "$c^!"; echo "run b: rc=$?"
    kernelscope compare-runs results "$STATE/results-rerun" --commit "$c" --all > "$STATE/compare-twice.txt"
    kernelscope compare-runs results "$STATE/results-rerun" --commit "$c" --json > "$STATE/compare-twice.json"
    tail -n 12 "$STATE/compare-twice.txt"
  }
  step twice twice
  alt results-base; alt results-slowdown
  local canary="Square.time_warm.*square-triton-flat1024"
  step slowdown sh -c "asv run --config asv.results-base.json --record-samples --machine $M -b '$canary' HEAD^! > $STATE/asv-base.log 2>&1 &&
    KERNELSCOPE_INJECT_SLOWDOWN=square-triton-flat1024 asv run --config asv.results-slowdown.json \
      --record-samples --machine $M -b '$canary' HEAD^! > $STATE/asv-slowdown.log 2>&1 &&
    kernelscope compare-runs $STATE/results-base $STATE/results-slowdown --commit $head --all > $STATE/compare-slowdown.txt"
  step canary env MACHINE="$M" bash scripts/gpu/canary.sh "$STATE/canary"
  step ncu python3 scripts/gpu/ncu_compare.py --json "$STATE/ncu.json"
  # History: commits whose suite has today's warm version, newest first, that changed a kernel or the
  # catalog and that results/ does not have yet (HISTORY_COMMITS names them instead). Each runs in an
  # asv run of its own: asv discovers the benchmarks once per run, in the newest commit's environment, and
  # maps parameter indices by position, so a commit whose catalog differs needs its own discovery; the
  # discovery of an old commit rewrites results/benchmarks.json, which is put back after.
  local version=$(grep '^VERSION = ' src/kernelscope/asv/suite.py)
  if [ -n "${HISTORY_COMMITS:-}" ]; then
    for c in $HISTORY_COMMITS; do git rev-parse "$c"; done
  else
    for c in $(git rev-list --skip=1 HEAD); do
      [ "$(git show "$c:src/kernelscope/asv/suite.py" 2>/dev/null | grep '^VERSION = ')" = "$version" ] || continue
      git diff --quiet "$c^" "$c" -- src/kernelscope/ops src/kernelscope/backends src/kernelscope/catalog.py && continue
      ls "results/$M/${c:0:8}"-*.json >/dev/null 2>&1 && continue
      echo "$c"
    done
  fi | head -n "${HISTORY:-4}" > "$STATE/history.txt"
  history() {
    cp results/benchmarks.json "$STATE/benchmarks.json.head"
    local c rc=0
    for c in $(cat "$STATE/history.txt"); do
      [ "$(date +%s)" -lt $(( $(cat "$STATE/stop_at") - ${HISTORY_COMMIT_S:-200} )) ] \
        || { echo "--- $(date +%T) ${c:0:8} not started: the lease ends before it would (LEASE_S)"; continue; }
      echo "--- $(date +%T) $(git log -1 --format='%h %s' "$c" | cut -c1-90)"
      asv run --record-samples --machine "$M" -b "${HISTORY_BENCH:-$history_bench}" "$c^!" \
        > "$STATE/asv-history-${c:0:8}.log" 2>&1 || rc=$?
      grep -cE "^\[.*(ok|failed)" "$STATE/asv-history-${c:0:8}.log" | sed 's/^/    benchmarks done: /'
      cp "$STATE/benchmarks.json.head" results/benchmarks.json
    done
    return "$rc"
  }
  # float32 time_warm at two sizes per op: where the tuning shows, at a fraction of a full run's cost
  local history_bench="benchmarks\.(Square|Mean|Softmax|Gelu)\.time_warm.*'(4096x4096|16384x16384|16777216|268435456|16384x1000|512x50257)'"
  step history history
  echo "=== ALL DONE"
}

case "${1:-}" in
  start)
    mkdir -p "$STATE"; (cd "$STATE" && rm -rf repo results-* ./*.log ./*.txt ./*.json)  # keep cache/
    # when the machine goes back (30 minutes held, less the start): steps that can stop early read it
    echo $(( $(date +%s) + ${LEASE_S:-1620} )) > "$STATE/stop_at"
    setsid nohup bash "$0" steps > "$STATE/log" 2>&1 < /dev/null &
    sleep 5; cat "$STATE/log" ;;
  steps) steps ;;
  wait)
    end=$(( $(date +%s) + ${2:-500} ))
    while [ "$(date +%s)" -lt "$end" ] && ! grep -q "ALL DONE" "$STATE/log"; do sleep 10; done
    cat "$STATE/steps.txt" 2>/dev/null; tail -n 5 "$STATE/log"
    for f in "$STATE"/asv-*.log; do [ -f "$f" ] && echo "--- $f" && grep -E '^\[' "$f" | tail -n 2; done ;;
  collect)  # safe at any time: what has finished so far
    [ -d "$REPO/results" ] && tar czf "$OUT/results.tgz" -C "$REPO" results $(cd "$REPO" && ls -d evidence 2>/dev/null)
    tar czf "$OUT/state.tgz" -C "$STATE" --exclude=repo --exclude=cache . ;;
  take)  # on this machine: what collect brought back (the device tool's files_at folder) into the repository
    from=${2:?usage: bench.sh take DIR (the folder holding results.tgz and state.tgz)}
    unpacked=$(mktemp -d /tmp/kernelscope-lease.XXXX)
    tar xzf "$from/results.tgz" -C "$unpacked" || exit 1
    mkdir -p "$unpacked/state" && tar xzf "$from/state.tgz" -C "$unpacked/state"
    # Only what the lease wrote: the repository it ran carried every file of results/ and evidence/ as they were
    # committed then, and here they may have moved on since (session 20: an H200 lease's take put back the H100's
    # floors.json, another the H200's machine.json, as their bundles carried them). A file the same as in the
    # lease's commit (state/head.txt) is left alone; without head.txt (older leases), the lease's machine's
    # folders are copied whole.
    machine=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['machine'])" \
      "$unpacked/state/machine.json" 2>/dev/null)
    lease_head=${LEASE_HEAD:-$(cat "$unpacked/state/head.txt" 2>/dev/null)}  # LEASE_HEAD: for a lease without it
    git cat-file -e "${lease_head:-none}^{commit}" 2>/dev/null || lease_head=
    (cd "$unpacked" && find results evidence -type f 2>/dev/null) | while read -r f; do
      if [ -n "$lease_head" ]; then
        git cat-file -e "$lease_head:$f" 2>/dev/null && git show "$lease_head:$f" | cmp -s - "$unpacked/$f" && continue
      elif [ -n "$machine" ]; then
        case "$f" in results/"$machine"/*|evidence/"$machine"/*) ;; */*/*) continue ;; esac
      fi
      mkdir -p "$(dirname "$f")" && cp "$unpacked/$f" "$f" && echo "  $f"
    done
    # the clock logs as committed: gzipped, a run's new records appended to a commit's stored log
    PYTHONPATH=src python3 -m kernelscope.results.clock_logs results | sed 's/^/  /'
    if [ -d "$unpacked/state/results-rerun" ]; then  # the next lease's twice adds to it
      rm -rf .carry/results-rerun && mkdir -p .carry && cp -r "$unpacked/state/results-rerun" .carry/results-rerun
      echo "results-rerun -> .carry/results-rerun"
    fi
    echo "state (logs, comparisons) in $unpacked/state"; git status --short results evidence ;;
  *) sed -n '2,/^set -u/{/^#/p}' "$0"; exit 2 ;;
esac
