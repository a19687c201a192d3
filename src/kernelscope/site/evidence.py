"""What the site knows of ``evidence/``: the method's evidence as data, per machine.

Three kinds of file per machine: ``evidence/<machine>/peers.json``, written by
``kernelscope crosscheck`` (:mod:`kernelscope.evidence.peers.data` owns its format;
nothing here opens a path that module does not name), with the narrowed runs'
``peers-<what>.json`` beside it,
``evidence/<machine>/canary.json``, written by ``scripts/gpu/canary.sh``
(:mod:`kernelscope.evidence.canary` owns that one), and
``evidence/<machine>/floors.json``, written by ``scripts/gpu/floors.py
--kernels`` (:mod:`kernelscope.evidence.floors`).
``KERNELSCOPE_EVIDENCE_DIR`` builds the site from another folder (the tests'
fixture). A missing folder, or one with no file in it, is not an error: the
pages say so and give the command that writes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kernelscope.evidence.peers import agreement, data as peers_data
from kernelscope.evidence.peers.data import PeersFile
from kernelscope.evidence import canary, floors

EVIDENCE_ENV = "KERNELSCOPE_EVIDENCE_DIR"
PEERS_COMMAND = "kernelscope crosscheck --gate"
NO_PEERS = (f"No peer-timer evidence yet. On a GPU box, `{PEERS_COMMAND}` times every variant at its op's sizes "
            "with the suite's clocks (warm, cold, graph, host) and, on the same callable, with "
            "`torch.utils.benchmark.Timer`, "
            "`triton.testing.do_bench`, `triton.testing.do_bench_cudagraph` and Nsight Compute, and writes "
            "`evidence/<machine>/peers.json`; commit it and rebuild the site.")


class EvidenceError(ValueError):
    """An evidence file the site cannot read: the message names the file."""


@dataclass
class MachinePeers:
    name: str  # the machine folder's name: asv's machine name
    path: Path
    peers: PeersFile

    @cached_property
    def summary(self) -> dict[str, agreement.ModeSummary]:
        return agreement.summarize(self.peers.records)

    @cached_property
    def gate(self) -> agreement.Gate:
        return agreement.gate(self.peers.records)


def _read_canary(path: Path) -> dict:
    data = json.loads(path.read_text())
    if data.get("schema") != canary.SCHEMA:
        raise ValueError(f"schema {data.get('schema')!r}, this site reads {canary.SCHEMA}")
    return data


def _read_each(paths, read):
    """(path, read(path)) for each evidence file (its folder is its machine); a file that cannot be read raises
    EvidenceError naming it."""
    for path in paths:
        try:
            yield path, read(path)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise EvidenceError(f"{path}: {type(exc).__name__}: {exc}") from exc


class EvidenceData:
    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root is not None else None
        self.machines: dict[str, MachinePeers] = {}
        self.canaries: dict[str, dict] = {}  # machine -> canary.json's content
        self.floors: dict[str, dict] = {}  # machine -> floors.json's content
        self.narrowed: dict[str, list[MachinePeers]] = {}  # machine -> its narrowed runs (crosscheck --op, --dtype)
        if self.root is None:
            return
        found = (lambda name: sorted(self.root.glob(f"*/{name}")) if self.root.is_dir() else [])  # noqa: E731
        self.floors = {p.parent.name: data for p, data in _read_each(found(floors.FILE), floors.read)}
        self.canaries = {p.parent.name: data for p, data in _read_each(found(canary.FILE), _read_canary)}
        self.machines = {p.parent.name: MachinePeers(p.parent.name, p, peers)
                         for p, peers in _read_each(peers_data.machines(self.root), peers_data.read)}
        for p, peers in _read_each(peers_data.narrowed(self.root), peers_data.read):
            self.narrowed.setdefault(p.parent.name, []).append(MachinePeers(p.parent.name, p, peers))

    @property
    def empty(self) -> bool:
        return not self.machines and not self.narrowed

    @property
    def machine_names(self) -> list[str]:
        """Every machine with a whole run or a narrowed one: whole runs' first, as the site's tabs order them."""
        return [*self.machines, *(m for m in self.narrowed if m not in self.machines)]

    def pick(self, machine: str | None) -> MachinePeers | None:
        """This machine's evidence when it has some, else the first machine's; None without any."""
        if machine in self.machines:
            return self.machines[machine]
        return next(iter(self.machines.values()), None)
