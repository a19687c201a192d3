#!/usr/bin/env python3
"""Run a command and end it (SIGTERM to its whole process group) after SECONDS: cut_off.py SECONDS LOG CMD...

A run cut off midway, as a preempted or time-limited GPU box ends one
(SIGTERM, what a shutdown sends; SIGINT would not do: a job started in the
background of a script ignores it, and so does the Python it starts). The
command's output goes to LOG, its exit status is printed.
"""
import os
import signal
import subprocess
import sys
import time

seconds, log, cmd = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
with open(log, "w") as out:
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc.wait(timeout=seconds)
        print(f"finished before the cut-off: rc={proc.returncode}")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        print(f"cut off after {seconds:.0f} s: rc={proc.wait()}")
