"""What softmax-numba's plan reads of the GPU it launches on (its ``gpu_facts``, `kernelscope plan --gpu this`)."""

from functools import cache

import torch

from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.numba.common import dram_gbps_per_sm, sm_count

from .plan import SCRATCH_BYTES


@cache
def device_limits(index: int) -> tuple[int, int]:
    """(dynamic shared memory a block may opt in to, L2 bytes) of a GPU."""
    props = torch.cuda.get_device_properties(index)
    optin = getattr(props, "shared_memory_per_block_optin", 48 * 1024)
    return optin - SCRATCH_BYTES, getattr(props, "L2_cache_size", 50 * 2**20)


@cache
def gpu_facts(device_index: int) -> DeviceFacts:
    """What plan_softmax reads of the GPU at ``device_index``: its SMs, L2, the dynamic shared memory a block may opt
    in to, and its DRAM's bandwidth an SM."""
    shared, l2 = device_limits(device_index)
    return DeviceFacts(f"cuda:{device_index}", sm_count(device_index), l2, dram_gbps_per_sm(device_index),
                       shared + SCRATCH_BYTES)
