#!/usr/bin/env bash
# Capture what ncu, cuobjdump, Triton, Numba and Inductor print on the GPU box
# (real output for the parsers' test fixtures). Run from the repository root.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 PROBE_OUT=${OUT:-/tmp}
O=$PROBE_OUT
{ ncu --version; which ncu cuobjdump nvdisasm nvcc; ls -d /usr/local/cuda*/nsight-compute*/extras/python 2>/dev/null; ls /opt/nvidia 2>/dev/null; } > $O/tools.txt 2>&1
cat $O/tools.txt
time ncu --clock-control none --nvtx --nvtx-include "regex:^[a-z]+:[a-z0-9-]+/" \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WorkloadDistribution \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  -f -o $O/probe python3 results-proofs/profiler-output/tool_probe.py > $O/ncu-run.txt 2>&1
tail -5 $O/ncu-run.txt
ncu --import $O/probe.ncu-rep --csv --page details --print-details all > $O/details.csv 2>&1
ncu --import $O/probe.ncu-rep --page details --print-details all --print-nvtx-rename kernel > $O/details.txt 2>&1
ncu --import $O/probe.ncu-rep --csv --page raw --print-nvtx-rename kernel > $O/raw.csv 2>&1
ncu --import $O/probe.ncu-rep --csv --page details --print-units base --print-fmt "" > /dev/null 2>&1
wc -l $O/*.csv $O/*.txt; head -c 1500 $O/details.txt
PROBE_INTROSPECT=1 python3 results-proofs/profiler-output/tool_probe.py > $O/introspect.txt 2>&1; tail -c 4000 $O/introspect.txt
gzip -f $O/raw.csv
