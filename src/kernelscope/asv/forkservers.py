"""A commit's forkserver kept from one round to its next: asv continuous imports the suite once a commit, not a round.

asv starts a forkserver, which imports the benchmark suite, in every call of
``run_benchmarks``. ``asv continuous`` (and ``asv run --interleave-rounds``)
makes one call per round, commit and environment, taking turns between the
commits: A B, B A, A B, ... and asv imported the same suite into a fresh
interpreter for every call: for kernelscope, torch and the start of every
framework selected (seconds on a CPU, more on a GPU box).

Here a call that has rounds after it keeps its forkserver when it ends, and a
later call gets it if everything the forkserver was started with is as it was:
the environment and the commit installed in it, the benchmark folder, the
launch method, and every variable of asv's process environment (the variants to
preload among them). A commit's files stay where they are while another commit
runs (:mod:`kernelscope.asv.env` installs each into a folder of its own), so
each commit, and each environment of asv's matrix, keeps its own: up to
:data:`KEPT_MAX` at once, the least recently used stopped first. As in one
``asv run``, which serves all of a commit's rounds from one forkserver, each
case still runs in a process of its own, forked from it. Anything else starts a
fresh one, as asv would; a call's last round, an interrupt and the end of asv's
process stop it.

A round that will start no benchmark process, because every case selected
already has the samples it wants (:mod:`kernelscope.asv.rounds`: asv
continuous's later rounds of cases that are not launch-bound), starts no
forkserver: its spawner starts one only if a case asks for a process after all.
"""

from __future__ import annotations

import atexit
import os

from . import hooks
from .rounds import runs_nothing
from .runs import current_run

# Each holds an imported suite (torch and the frameworks selected, no GPU context): a few hundred MB of host memory.
# asv continuous needs two (its commits), an interleaved run of a matrix one per environment.
KEPT_MAX = 4
_KEPT: list = []  # [(key, spawner)], the most recently used last: forkservers kept for later calls
_MORE_ROUNDS = [False]  # the call of run_benchmarks now running has rounds after it
_CALL: dict = {}  # the call of run_benchmarks now running: its run_rounds, extra_params, quick


def _key(env, benchmark_dir: str, launch_method) -> tuple:
    return (launch_method, env.name, getattr(env, "_path", None), env.installed_commit_hash,
            os.path.abspath(benchmark_dir), tuple(sorted(env.env_vars.items())), tuple(sorted(os.environ.items())))


def _stop(spawner) -> None:
    """Stop one kept forkserver (asv's own close, which also reports what the server printed)."""
    _KEPT[:] = [(k, s) for k, s in _KEPT if s is not spawner]
    spawner.close()


def stop_kept() -> None:
    """Stop every kept forkserver."""
    while _KEPT:
        _stop(_KEPT[-1][1])


class KeptSpawner:
    """asv's spawner for one call of run_benchmarks; its ``close`` keeps the forkserver where rounds follow."""

    def __init__(self, spawner):
        self.spawner = spawner

    def __getattr__(self, name):
        return getattr(self.spawner, name)

    def close(self):
        if not any(s is self.spawner for _, s in _KEPT):
            self.spawner.close()
        elif self.spawner.interrupted:
            stop_kept()
        elif not _MORE_ROUNDS[0] or self.spawner.server_proc.poll() is not None:
            _stop(self.spawner)


class IdleSpawner:
    """The spawner of a round that runs nothing (every case has its samples): no forkserver, unless a case asks."""

    def __init__(self, start):
        self._start, self._spawner, self.interrupted = start, None, False

    def preimport(self):
        return True, ""

    def _started(self):
        if self._spawner is None:
            self._spawner = self._start()
            self._import = self._spawner.preimport()
        return self._spawner

    def run(self, *args, **kwargs):
        spawner = self._started()
        ok, out = self._import
        return spawner.run(*args, **kwargs) if ok else (f"asv: benchmark suite import failed\n{out}", 1)

    def create_setup_cache(self, *args, **kwargs):
        return self._started().create_setup_cache(*args, **kwargs)

    def interrupt(self):
        self.interrupted = True
        if self._spawner is not None:
            self._spawner.interrupt()

    def close(self):
        if self._spawner is not None:
            self._spawner.close()


def _runs_nothing() -> bool:
    if not _CALL or _CALL.get("quick"):
        return False
    run = current_run()
    return runs_nothing(run, run.benchmarks, _CALL.get("run_rounds"), _CALL.get("extra_params"))


def spawner_for(get_spawner, env, benchmark_dir: str, launch_method, idle: bool = True):
    """The kept forkserver if it is the one ``get_spawner`` would start now, none yet for a round that runs nothing
    (``idle``), else a new spawner (a forkserver kept)."""
    key = _key(env, benchmark_dir, launch_method)
    for kept_key, kept in list(_KEPT):
        if kept_key == key:
            if kept.server_proc.poll() is None:
                _KEPT.remove((kept_key, kept))
                _KEPT.append((kept_key, kept))  # the most recently used
                return KeptSpawner(kept)
            _stop(kept)  # a server that died is not used again
    if idle and _runs_nothing():  # none started, and the kept ones stay kept
        return IdleSpawner(lambda: spawner_for(get_spawner, env, benchmark_dir, launch_method, idle=False))
    spawner = get_spawner(env, benchmark_dir, launch_method)
    if launch_method != "forkserver":
        return spawner
    while len(_KEPT) >= KEPT_MAX:
        _stop(_KEPT[0][1])
    _KEPT.append((key, spawner))
    return KeptSpawner(spawner)


def keep_forkservers() -> None:
    """Keep a call's forkserver for the next call that would start the same one (idempotent)."""

    def note_rounds(run_all):
        def run_benchmarks(*args, **kwargs):
            rounds = kwargs.get("run_rounds")  # asv's interleaved rounds: one a call, counting down to 1
            _MORE_ROUNDS[0] = bool(rounds) and min(rounds) > 1
            _CALL.update(run_rounds=rounds, extra_params=kwargs.get("extra_params"), quick=kwargs.get("quick"))
            try:
                return run_all(*args, **kwargs)
            finally:
                _MORE_ROUNDS[0] = False
                _CALL.clear()

        return run_benchmarks

    def kept(get_spawner):
        atexit.register(stop_kept)

        def get_kept_spawner(env, benchmark_dir, launch_method):
            return spawner_for(get_spawner, env, benchmark_dir, launch_method)

        return get_kept_spawner

    hooks.wrap("asv.runner:run_benchmarks", note_rounds)
    hooks.wrap("asv.runner:get_spawner", kept)
