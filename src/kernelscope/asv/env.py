"""An asv environment that reuses the interpreter's packages: ``environment_type: "syssite"``.

asv's virtualenv environments reinstall every dependency for each commit,
torch included: hours, and impossible on an offline GPU box. This environment
is a venv that sees the site-packages of the chosen Python, so
torch, triton and numba come from that Python, and only kernelscope itself is
built and installed per commit (``--no-deps``, no index). Unlike
``environment_type: "existing"`` it supports commit ranges, ``asv continuous``
and saved results without ``--set-commit-hash``.

asv.conf.json loads it with ``"plugins": [".src.kernelscope.asv.env"]``
(a leading dot imports from the repository root), so every asv command of
this repository gets the rest of the integration with it:

* results saved after every case, merged under a lock, resumed case by case
  (:mod:`kernelscope.asv.saves`);
* a case run in asv's further rounds only while it has fewer samples than its
  benchmark's ``enough_samples`` (:mod:`kernelscope.asv.rounds`): several
  processes for the launch-bound cases, one for the rest;
* a case's other modes measured in its process (:mod:`kernelscope.asv.siblings`):
  one process per case, not one per mode;
* intervals of cases sampled one value per process that say where a rerun's
  median lands (:mod:`kernelscope.asv.intervals`);
* one GPU's share of the cases when :mod:`kernelscope.asv.parallel` runs one
  asv process per GPU;
* each commit installed into a folder of its own, beside its wheel in asv's
  build cache, and the environment pointed at it: asv continuous's turns
  switch commits without reinstalling, and a forkserver kept for a commit's
  next round (:mod:`kernelscope.asv.forkservers`) keeps its files: one suite
  import a commit, not a turn.

Each relies on names asv does not promise to keep (:mod:`kernelscope.asv.hooks`):
loading the plugin with an asv that lacks one stops with a message naming it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from asv import environment, util
from asv.console import log

from . import hooks, parallel
from .forkservers import keep_forkservers
from .rounds import rounds_until_enough_samples
from .runs import track_runs
from .saves import save_every_case
from .siblings import run_siblings_in_one_process


def _find_python(python: str) -> str | None:
    if os.path.sep in python and os.path.isfile(python):
        return python
    # The interpreter running asv first: its packages (torch, a modern
    # setuptools) are the point, and `python3.X` on PATH may be a bare base
    # interpreter that has none of them.
    current = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if python in (current, str(sys.version_info[0])):
        return sys.executable
    return shutil.which(f"python{python}") if re.match(r"^\d+(\.\d+)*$", python) else shutil.which(python)


CLOCK_LOG_RESULTS_DIR = "ASV_KERNELSCOPE_RESULTS_DIR"  # asv passes on only ASV_* variables of its own

_SITE_DIRS = "import sys; print('\\n'.join(p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))))"


class SystemSitePackages(environment.Environment):
    tool_name = "syssite"

    def __init__(self, conf, python, requirements, tagged_env_vars):
        self._executable = _find_python(python)
        if self._executable is None:
            raise environment.EnvironmentUnavailable(f"syssite: no Python executable found for {python!r}")
        self._python = python
        self._requirements = requirements
        super().__init__(conf, python, requirements, tagged_env_vars)
        # Benchmark processes log each sample's SM clock beside asv's result file
        # (kernelscope.results.clock_logs.RESULTS_DIR_ENV; written again here: the plugin imports nothing
        # outside kernelscope.asv).
        self._global_env_vars[CLOCK_LOG_RESULTS_DIR] = os.path.abspath(conf.results_dir)

    @classmethod
    def matches(cls, python):
        return _find_python(python) is not None

    def _setup(self):
        log.info(f"Creating venv on top of the packages of {self._executable} for {self.name}")
        util.check_call([self._executable, "-m", "venv", "--without-pip", self._path])
        # A pip command of its own, which runs the parent's pip (as `python -m pip` does): asv keeps an environment
        # only where it finds one, and without it every asv command made this one anew, building and installing
        # the project again before its first benchmark.
        pip = os.path.join(self._path, "bin", "pip")
        with open(pip, "w") as f:
            f.write('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n')
        os.chmod(pip, 0o755)
        # The chosen Python is often itself a venv (the GPU box's torch lives in
        # one), and `venv --system-site-packages` would see only its base
        # interpreter. Add its site directories from a .pth file instead; they come
        # after the env's own site-packages and the commit's install (COMMIT_PTH sorts
        # first), so the kernelscope installed per commit wins over any copy the
        # parent has. site.addsitedir, not a bare
        # path: it also runs the parent's own .pth files, such as numba-cuda's,
        # which redirects `numba.cuda` to numba-cuda (without it the old built-in
        # numba.cuda loads and rejects launch_bounds).
        parent = util.check_output([self._executable, "-c", _SITE_DIRS]).split()
        with open(os.path.join(self._purelib(), "_kernelscope_parent_site.pth"), "w") as f:
            f.write("".join(f"import site; site.addsitedir({d!r})\n" for d in parent))
        wanted = {**self._requirements, **self._base_requirements}
        missing = [name for name in wanted if not self._has(name)]
        if missing:
            # Only what the interpreter lacks is installed; offline, this fails with pip's message.
            log.info(f"Installing into {self.name}: {', '.join(missing)}")
            self._run_pip(["install", "--no-deps", *[self._pip_name(n, wanted[n]) for n in missing]])

    @staticmethod
    def _pip_name(key: str, version: str) -> str:
        name = key[4:] if key.startswith("pip+") else key
        return f"{name}{version}" if version and version[0] in "<>=!~" else (f"{name}=={version}" if version else name)

    def _has(self, key: str) -> bool:
        name = re.split(r"[<>=!~\[ ]", key[4:] if key.startswith("pip+") else key)[0]
        code = f"import importlib.metadata as m, sys; m.version({name!r})"
        try:
            self.run_executable("python", ["-c", code], display_error=False)
            return True
        except util.ProcessError:
            return False

    def _purelib(self) -> str:
        """The environment's site-packages, asked of its interpreter once: a start of it costs about a second
        (the parent's .pth files run), and asv continuous installs a commit every other round."""
        if getattr(self, "_purelib_path", None) is None:
            self._purelib_path = self.run_executable(
                "python", ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
        return self._purelib_path

    def _run_pip(self, args, **kwargs):
        return self.run_executable("python", ["-m", "pip", *args], **kwargs)

    def _install_project(self, repo, commit_hash, build_dir):
        """Install the commit into ``installed/`` beside its wheel in asv's build cache (once: a turn of asv continuous
        that comes back to it only points the environment there again), then point the environment at it.

        A commit's files stay where they are while another commit is installed: a forkserver kept for its next round
        imports from them, and asv's build cache (``build_cache_size``) removes them with the wheel."""
        if not any(INSTALL_DIR in part for part in (self._install_command or [])):
            raise util.UserError(f"syssite: install_command must install into {INSTALL_DIR}, a folder of the commit's "
                                 f"own (as asv.conf.json's does: pip install --target {INSTALL_DIR}); "
                                 f"it is {self._install_command!r}")
        folder = os.path.join(self._global_env_vars["ASV_BUILD_CACHE_DIR"], "installed")
        done = os.path.join(folder, INSTALLED_MARK)
        checksum = json.dumps(self._get_install_checksum())
        if not (os.path.isfile(done) and Path(done).read_text() == checksum):
            shutil.rmtree(folder, ignore_errors=True)  # a partial install, or one made by another install command
            self._global_env_vars["ASV_INSTALL_DIR"] = folder
            try:
                super()._install_project(repo, commit_hash, build_dir)
            finally:
                del self._global_env_vars["ASV_INSTALL_DIR"]
            added = add_left_out_sources(build_dir, folder)
            if added:
                log.info(f"{repo.get_decorated_hash(commit_hash, 8)}'s wheel left out {', '.join(added)}: "
                         "installed from its tree")
            with open(done, "w") as f:
                f.write(checksum)
        point_at(self._purelib(), folder)

    def run(self, args, **kwargs):
        log.debug(f"Running '{' '.join(args)}' in {self.name}")
        return self.run_executable("python", args, **kwargs)


INSTALL_DIR = "{install_dir}"  # asv.conf.json's install_command installs a commit there
INSTALLED_MARK = ".kernelscope-installed"  # written last: the install it sits in is whole, made by this command
COMMIT_PTH = "_kernelscope_commit.pth"


def point_at(site_packages: str, folder: str, package: str = "kernelscope") -> None:
    """Make ``folder`` (a commit's install) the one the environment's interpreters import ``package`` from.

    A .pth line of the environment's site-packages, relative to it (a copied environment keeps working), written
    aside and renamed over the old one. A copy of ``package`` in site-packages itself, which an older install
    command put there, would come first on the path: it is removed."""
    for name in os.listdir(site_packages):
        if name == package or (name.startswith(f"{package}-") and name.endswith(".dist-info")):
            shutil.rmtree(os.path.join(site_packages, name))
    pth = os.path.join(site_packages, COMMIT_PTH)
    with open(pth + ".tmp", "w") as f:
        f.write(os.path.relpath(folder, site_packages) + "\n")
    os.replace(pth + ".tmp", pth)


# Files the package reads at run time besides its modules. Some older commits'
# wheels leave pack16.cuh out, so their CUDA variants would fail to build in a
# history run; the commit's own copy is what its kernels include.
KERNEL_SOURCES = (".cu", ".cuh", ".def", ".cpp", ".h")


def add_left_out_sources(build_dir: str, site_packages: str, package: str = "kernelscope") -> list[str]:
    """Copy the kernel sources of ``build_dir``'s package that its installed copy lacks; their package paths."""
    tree = os.path.join(build_dir, "src", package)
    installed = os.path.join(site_packages, package)
    added = []
    if not (os.path.isdir(tree) and os.path.isdir(installed)):
        return added
    for folder, _, names in os.walk(tree):
        for name in sorted(names):
            if not name.endswith(KERNEL_SOURCES):
                continue
            rel = os.path.relpath(os.path.join(folder, name), tree)
            target = os.path.join(installed, rel)
            if not os.path.exists(target) and os.path.isdir(os.path.dirname(target)):
                shutil.copyfile(os.path.join(folder, name), target)
                added.append(rel)
    return added


hooks.require()
track_runs()
keep_forkservers()
parallel.take_this_gpus_share()
# The per-case runner, innermost first: siblings serve what a host measured, rounds count it, saves write it.
run_siblings_in_one_process()
rounds_until_enough_samples()
save_every_case()
