"""Three calls of softmax-numba at 64x262144 and 512x50257 (float32), for Nsight Compute to profile:

    ncu --clock-control none -k regex:softmax --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
        dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
        launch__grid_size,launch__block_size python3 ncu_resident.py
"""
import torch
from kernelscope.catalog import VARIANTS
v = VARIANTS["softmax-numba"]
for shape in ((64, 262144), (512, 50257)):
    x = v.op_spec.make_input(shape, "float32", "cuda", 7); out = torch.empty_like(x)
    for _ in range(3): v(x, out)
    torch.cuda.synchronize()
