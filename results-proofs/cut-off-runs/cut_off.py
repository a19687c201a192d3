#!/usr/bin/env python3
"""Run a command and end it (SIGTERM to its whole process group) after SECONDS: cut_off.py SECONDS LOG CMD...

A run cut off midway, as a preempted or time-limited GPU box ends one
(SIGTERM, what a shutdown sends; SIGINT would not do: a job started in the
background of a script ignores it, and so does the Python it starts). The
command's output goes to LOG, its exit status is printed.

With CUTOFF_AFTER=REGEX in the environment the SECONDS count from the first
line of LOG that matches it: asv prints "Running (benchmarks.Mean.track_cold--)"
when it moves on from the benchmark before, which it has saved by then, so a
cut a few seconds later lands mid-run with something saved (a fixed cut-off
from the start lands wherever the environment's build and the suite's import
leave it: at 45 and 100 s the H100 had not finished Mean's first benchmark).
"""
import os
import re
import signal
import subprocess
import sys
import time

seconds, log, cmd = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
after = os.environ.get("CUTOFF_AFTER")
with open(log, "w") as out:
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    t0, seen = time.monotonic(), after is None
    while proc.poll() is None:
        if not seen:
            with open(log, errors="replace") as f:
                if re.search(after, f.read()):
                    seen, t0 = True, time.monotonic()
        elif time.monotonic() - t0 > seconds:
            os.killpg(proc.pid, signal.SIGTERM)
            print(f"cut off {seconds:.0f} s after " + (f"the log showed {after!r}" if after else "the start")
                  + f": rc={proc.wait()}")
            break
        time.sleep(0.5)
    else:
        print(f"finished before the cut-off: rc={proc.returncode}")
