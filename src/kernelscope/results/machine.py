"""Machine identity: what the results ran on, recorded in asv's machine file, and which box measured it.

asv names machines by hostname by default, which on ephemeral GPU boxes changes
every boot and splits history. ``kernelscope machine`` names the machine after
its GPU and records, as extra keys of ``~/.asv-machine.json`` (stored in every
result file's ``params``), what describes the configuration: the GPU, driver,
CUDA, torch, triton and numba versions. asv draws one graph per set of those
keys, so nothing measured per run goes there.

What is measured per box goes beside the results instead: each ``kernelscope
machine`` appends the box's id (:func:`host_id`) and its measured copy
bandwidth to ``results/<machine>/boxes.jsonl``. The machine's copy bandwidth,
which percent-of-peak figures divide by, is the median of those readings
(:func:`copy_gbps`): one number per machine wherever it is shown.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path

ASV_MACHINE_FILE = Path(os.environ.get("ASV_MACHINE_FILE", Path.home() / ".asv-machine.json"))
MACHINE_ENV = "KERNELSCOPE_MACHINE"  # the asv machine name, when ~/.asv-machine.json holds several


def machine_name() -> str | None:
    """The asv machine this run records under: $KERNELSCOPE_MACHINE, else the only one in asv's machine file."""
    if os.environ.get(MACHINE_ENV):
        return os.environ[MACHINE_ENV]
    try:
        names = [k for k in json.loads(ASV_MACHINE_FILE.read_text()) if k != "version"]
    except (OSError, ValueError):
        return None
    return names[0] if len(names) == 1 else None


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _nvidia_smi(field: str) -> str:
    """One ``nvidia-smi --query-gpu`` field of GPU 0, or "unknown"."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


# FP32 lanes (CUDA cores) per SM by compute capability: an FMA counts two FLOPs.
FP32_LANES_PER_SM = {(7, 0): 64, (8, 0): 64, (8, 6): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128}
# FP32 (non-tensor) peak from NVIDIA's datasheets, TFLOP/s, for machines recorded
# before `kernelscope machine` stored the SM clock (H100 SXM5: 67; H200 SXM: 67).
DATASHEET_FP32_TFLOPS = {"NVIDIA H100 80GB HBM3": 67.0, "NVIDIA H200": 67.0}


def fp32_peak(info: dict) -> tuple[float, str] | None:
    """The GPU's FP32 compute roof in TFLOP/s and how it was obtained, from a machine record; None if unknown."""
    try:
        sms, mhz = int(info["gpu_sms"]), float(info["gpu_max_sm_mhz"])
        lanes = FP32_LANES_PER_SM[tuple(int(p) for p in info["compute_capability"].split("."))]
        return sms * lanes * 2 * mhz * 1e6 / 1e12, f"{sms} SMs x {lanes} FP32 lanes x 2 x {mhz:.0f} MHz"
    except (KeyError, ValueError):
        pass
    if info.get("gpu") in DATASHEET_FP32_TFLOPS:
        return DATASHEET_FP32_TFLOPS[info["gpu"]], "NVIDIA datasheet"
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram() -> str:
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        return f"{kb * 1024}"
    except (OSError, AttributeError):
        return ""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def describe() -> dict[str, str]:
    """Everything asv's machine file should say about this machine (all values strings)."""
    import torch

    info = {
        # asv's own keys. The host's CPU, cores, memory and kernel release are the box's (box_facts):
        # as machine params they would split one GPU's history by the box that ran it.
        "arch": platform.machine(),
        "cpu": "",
        "num_cpu": "",
        "os": platform.system(),
        "ram": "",
        "torch": torch.__version__,
        "triton": _version("triton"),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update({
            "gpu": props.name,
            "gpu_sms": str(props.multi_processor_count),
            "gpu_l2_mib": f"{getattr(props, 'L2_cache_size', 0) / 2**20:.0f}",
            "gpu_memory_gib": f"{props.total_memory / 2**30:.0f}",
            "compute_capability": f"{props.major}.{props.minor}",
            "driver": _nvidia_smi("driver_version"),
            "gpu_max_sm_mhz": _nvidia_smi("clocks.max.sm"),
            "cuda": str(torch.version.cuda),
        })
        info["machine"] = slug(props.name)
    else:
        info.update({"gpu": "none", "driver": "none", "cuda": "none"})
        info["machine"] = "cpu-" + slug(platform.machine())
    return info


def write_asv_machine(info: dict[str, str], name: str | None = None, path: Path = ASV_MACHINE_FILE) -> str:
    """Add (or replace) this machine in asv's machine file; return its name."""
    name = name or info["machine"]
    entry = {**info, "machine": name}
    data = json.loads(path.read_text()) if path.exists() else {}
    data["version"] = 1
    data[name] = entry
    path.write_text(json.dumps(data, indent=4, sort_keys=True) + "\n")
    return name


def _gpu_uuids() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(line.strip() for line in out.stdout.splitlines() if line.strip()) if out.returncode == 0 else []


@cache
def host_id() -> str:
    """This box as the host-dependent benchmarks name it: ``box-`` and 8 hex digits.

    From the UUIDs of every GPU in the box (nvidia-smi lists them all, whatever
    CUDA_VISIBLE_DEVICES says, so one asv process per GPU names the same box);
    without a GPU, from the OS's machine id, or the hostname.
    """
    import hashlib

    basis = ",".join(_gpu_uuids())
    if not basis:
        try:
            basis = Path("/etc/machine-id").read_text().strip()
        except OSError:
            basis = ""
        basis = basis or platform.node()
    return "box-" + hashlib.sha256(basis.encode()).hexdigest()[:8]


BOXES_FILE = "boxes.jsonl"  # not .json: asv reads every .json of a machine's folder as a result file


def box_facts(copy_gbps: float | None = None) -> dict:
    """This box's id and what it is: CPU, cores, memory, kernel, GPUs, and its copy bandwidth (GB/s, read +
    write) where the caller measured it (kernelscope.timing.copy_bandwidth, which reads this module)."""
    facts = {"host": host_id(), "cpu": _cpu_model(), "num_cpu": os.cpu_count(), "ram": _ram(),
             "os": f"{platform.system()} {platform.release()}", "gpus": len(_gpu_uuids()),
             "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if copy_gbps is not None:
        facts["copy_gbps"] = round(copy_gbps, 1)
    return facts


def record_box(results_dir: str | Path, machine: str, facts: dict) -> Path:
    """Append a box's facts to ``results/<machine>/boxes.jsonl``; the file's path."""
    path = Path(results_dir) / machine / BOXES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(facts, sort_keys=True) + "\n")
    return path


def boxes(results_dir: str | Path, machine: str) -> list[dict]:
    """Every box reading recorded for a machine, oldest first."""
    path = Path(results_dir) / machine / BOXES_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def copy_gbps(results_dir: str | Path, machine: str) -> float | None:
    """The machine's copy bandwidth: the median of its boxes' readings (GB/s), or None if none was recorded."""
    readings = [b["copy_gbps"] for b in boxes(results_dir, machine) if b.get("copy_gbps")]
    return round(statistics.median(readings)) if readings else None
