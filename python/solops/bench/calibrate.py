"""Measures the device's ceilings for the roofline and writes them as a device profile.

    python -m solops.bench.calibrate --out bench/results/h200/profile.json

Everything is timed with solops.bench.timing (cold L2, profiler device time, median).
Ceilings (design/measure.md, Roofline):
- memory: copy bandwidth in bytes read + written per second, from a 1 GiB device-to-device
  memcpy and from a plain elementwise copy kernel; the roofline uses the larger of the two. The
  same copy kernel at the sizes of the catalogue's memory-bound rows (4-256 MiB moved) shows what
  a kernel that only streams reaches at each size: the launch, the first round trip and the last
  wave's tail are a larger share of a smaller call.
- compute: dense GEMM 8192^3 via torch.matmul for bf16, f16, tf32 and f32. The f32 GEMM without
  TF32 runs on CUDA cores (FFMA), so it is also the f32 CUDA-core rate.
- latency floor: the device time of the smallest real kernel (a 1-element add).
"""

import argparse
import datetime
import json
import subprocess
from pathlib import Path

import torch

from solops.bench.timing import device_time

COPY_BYTES = 1 << 30
# Bytes read + written by each call of the size curve.
COPY_CURVE_MOVED_BYTES = [(1 << 20) * mib for mib in (4, 8, 16, 32, 64, 128, 256)]
GEMM_SIZE = 8192
GEMM_DTYPES = {
    "bf16": (torch.bfloat16, "highest"),
    "f16": (torch.float16, "highest"),
    "tf32": (torch.float32, "high"),  # "high" lets f32 matmuls use TF32 tensor cores
    "f32": (torch.float32, "highest"),
}


def nvidia_smi(fields: str) -> list[str] | None:
    """One GPU's values for comma-separated query fields, or None without nvidia-smi."""
    command = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", "0"]
    try:
        output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return [value.strip() for value in output.stdout.strip().split(",")]


def as_number(text: str):
    try:
        return float(text)
    except ValueError:
        return None  # e.g. "[N/A]"


def device_facts() -> dict:
    properties = torch.cuda.get_device_properties(0)
    facts = {
        "device": torch.cuda.get_device_name(0),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "sm_count": properties.multi_processor_count,
        "l2_bytes": properties.L2_cache_size,
        "memory_bytes": properties.total_memory,
        "driver": None,
    }
    smi = nvidia_smi("driver_version")
    if smi:
        facts["driver"] = smi[0]
    return facts


def clocks_mhz() -> dict:
    smi = nvidia_smi("clocks.sm,clocks.max.sm,clocks.mem")
    if not smi:
        return {"sm_clock_mhz": None, "sm_clock_max_mhz": None, "mem_clock_mhz": None}
    sm, sm_max, mem = (as_number(value) for value in smi)
    return {"sm_clock_mhz": sm, "sm_clock_max_mhz": sm_max, "mem_clock_mhz": mem}


def copy_kernel_bytes_per_s(moved: int) -> float:
    """Bytes read + written per second by the copy kernel in a call that moves `moved` bytes: a
    float add of 0, a plain vectorized elementwise kernel that reads and writes each byte once."""
    source = torch.randn(moved // 8, device="cuda")
    destination = torch.empty_like(source)
    timed = device_time(lambda: torch.add(source, 0, out=destination))
    return moved / (timed.median_ms * 1e-3)


def copy_bandwidths() -> dict:
    """Bytes read + written per second: a memcpy (copy engine path) and a copy kernel."""
    source = torch.randint(0, 256, (COPY_BYTES,), dtype=torch.uint8, device="cuda")
    destination = torch.empty_like(source)
    memcpy = device_time(lambda: destination.copy_(source))
    moved = 2 * COPY_BYTES
    return {
        "memcpy_bytes_per_s": moved / (memcpy.median_ms * 1e-3),
        "copy_kernel_bytes_per_s": copy_kernel_bytes_per_s(moved),
    }


def copy_kernel_by_size() -> list[dict]:
    """The copy kernel's rate at each size of COPY_CURVE_MOVED_BYTES."""
    return [{"moved_bytes": moved, "bytes_per_s": copy_kernel_bytes_per_s(moved)} for moved in COPY_CURVE_MOVED_BYTES]


def gemm_rates() -> dict:
    """FLOP/s of an 8192^3 matmul per dtype (2*M*N*K FLOPs per call)."""
    flops = 2.0 * GEMM_SIZE**3
    generator = torch.Generator(device="cuda").manual_seed(0)
    rates = {}
    previous_precision = torch.get_float32_matmul_precision()
    try:
        for name, (dtype, precision) in GEMM_DTYPES.items():
            torch.set_float32_matmul_precision(precision)
            shape = (GEMM_SIZE, GEMM_SIZE)
            a = torch.randn(shape, device="cuda", generator=generator).to(dtype)
            b = torch.randn(shape, device="cuda", generator=generator).to(dtype)
            c = torch.empty(shape, device="cuda", dtype=dtype)
            timed = device_time(lambda: torch.matmul(a, b, out=c))
            rates[name] = flops / (timed.median_ms * 1e-3)
    finally:
        torch.set_float32_matmul_precision(previous_precision)
    return rates


def latency_floor_ms() -> float:
    x = torch.randn(1, device="cuda")
    y = torch.empty_like(x)
    return device_time(lambda: torch.add(x, 1, out=y)).median_ms


def calibrate() -> dict:
    profile = device_facts()
    bandwidths = copy_bandwidths()
    rates = gemm_rates()
    # Clocks read right after the GEMMs, while the GPU is still at its loaded clock.
    profile.update(clocks_mhz())
    profile["copy_bandwidth"] = bandwidths
    profile["memory_bytes_per_s"] = max(bandwidths.values())
    profile["copy_kernel_by_size"] = copy_kernel_by_size()
    profile["gemm_flops_per_s"] = rates
    profile["cuda_core_f32_flops_per_s"] = rates["f32"]
    profile["latency_floor_ms"] = latency_floor_ms()
    profile["method"] = "torch.profiler CUDA activities, L2 flushed by a 512 MiB memcpy, median"
    return profile


def print_summary(profile: dict) -> None:
    print(f"{profile['device']}  driver {profile['driver']}  torch {profile['torch']}  "
          f"SM clock {profile['sm_clock_mhz']} MHz (max {profile['sm_clock_max_mhz']})")
    for name, value in profile["copy_bandwidth"].items():
        print(f"  {name:28s} {value / 1e12:8.2f} TB/s")
    for point in profile["copy_kernel_by_size"]:
        print(f"  copy kernel, {point['moved_bytes'] >> 20:4d} MiB moved {point['bytes_per_s'] / 1e12:8.2f} TB/s")
    for name, value in profile["gemm_flops_per_s"].items():
        print(f"  gemm {name:23s} {value / 1e12:8.1f} TFLOP/s")
    print(f"  {'latency floor':28s} {profile['latency_floor_ms'] * 1e3:8.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/h200/profile.json"))
    args = parser.parse_args()
    profile = calibrate()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(profile, indent=2) + "\n")
    print_summary(profile)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
