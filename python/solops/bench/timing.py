"""Device time of a callable, measured the one way every implementation is measured.

Method (design/measure.md, "A verified way to do it in Python"): torch.profiler records CUDA
activities around N iterations of `flush_a.copy_(flush_b); fn()`. The flush is a 512 MiB
device-to-device memcpy (more than 2x the H200's L2), so every call starts with a cold L2, and
it is one memcpy activity per iteration, so it marks the iteration boundaries. The device time
of one call is the sum of the durations of the kernels, memcpys and memsets between two flushes.
"""

import math
import os
import statistics
import time
from dataclasses import dataclass
from functools import cache

import torch
from torch.profiler import ProfilerActivity, profile

from solops.bench.launch import collection_paused

FLUSH_BYTES = 512 * 1024 * 1024
MIN_WARMUP_CALLS = 3
MIN_WARMUP_S = 0.025
MIN_TIMED_CALLS = 30
MIN_TIMED_S = 0.100
# Caps the profiler trace for very short calls; 100 ms of 0.3 ms iterations is ~330 calls.
MAX_TIMED_CALLS = 1000
# The profiler occasionally loses activities of the first iterations after it starts; one
# retry of the whole profiled loop is enough in practice.
PROFILE_ATTEMPTS = 2

# A profiler session leaves CUPTI attached to the process unless TEARDOWN_CUPTI is 1 (PyTorch's
# profiler asks Kineto to keep it only where CUDA graphs are profiled), and every later CUDA call
# of the process then pays its callbacks: host_inclusive_ms, which follows device_time, would time
# launches slowed by the profiler, ours and the alternatives' alike. Read when a session ends.
os.environ.setdefault("TEARDOWN_CUPTI", "1")


@dataclass(frozen=True)
class DeviceTime:
    median_ms: float
    min_ms: float
    p90_ms: float
    calls: int


@cache
def _flush_buffers() -> tuple[torch.Tensor, torch.Tensor]:
    destination = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    source = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    return destination, source


def flush_l2() -> None:
    destination, source = _flush_buffers()
    destination.copy_(source)


def _warm_up(fn) -> float:
    """Runs flush+fn until both warm-up minimums are met; returns wall seconds per iteration."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    calls = 0
    while calls < MIN_WARMUP_CALLS or time.perf_counter() - start < MIN_WARMUP_S:
        flush_l2()
        fn()
        # Synchronizing each time makes the wall clock count device work, not queued launches.
        torch.cuda.synchronize()
        calls += 1
    return (time.perf_counter() - start) / calls


def _timed_calls(seconds_per_iteration: float, quick: bool) -> int:
    if quick:
        return MIN_TIMED_CALLS
    wanted = math.ceil(MIN_TIMED_S / seconds_per_iteration)
    return max(MIN_TIMED_CALLS, min(wanted, MAX_TIMED_CALLS))


def _is_memcpy(name: str) -> bool:
    return name.startswith("Memcpy")


def _profile_iterations(fn, calls: int) -> list:
    """GPU activities of `calls` iterations of flush+fn, in start-time order."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush_l2()
            fn()
        torch.cuda.synchronize()
    events = prof.profiler.kineto_results.events()
    gpu_events = [e for e in events if e.device_type() == torch._C._autograd.DeviceType.CUDA]
    gpu_events.sort(key=lambda e: e.start_ns())
    return gpu_events


def _iterations(gpu_events: list, calls: int) -> list[list] | None:
    """Splits the activity stream at the flushes into each iteration's activities (flush left out);
    None if it does not have the expected shape.

    Every iteration issues the same activities on one stream, flush first, so the stream is
    `calls` equal chunks that each start with a memcpy. Splitting by count (and checking that
    shape) stays right when fn itself issues memcpys, e.g. the copy-bandwidth calibration.
    """
    if not gpu_events or len(gpu_events) % calls != 0:
        return None
    chunk = len(gpu_events) // calls
    if chunk < 2:
        return None  # fn launched no GPU work at all
    iterations = []
    for first in range(0, len(gpu_events), chunk):
        if not _is_memcpy(gpu_events[first].name()):
            return None
        iterations.append(gpu_events[first + 1 : first + chunk])
    return iterations


def _profiled_iterations(fn, calls: int) -> list[list]:
    for _ in range(PROFILE_ATTEMPTS):
        gpu_events = _profile_iterations(fn, calls)
        iterations = _iterations(gpu_events, calls)
        if iterations is not None:
            return iterations
    raise RuntimeError("cannot split the profile at the flushes: " + _describe(gpu_events, calls))


def _describe(gpu_events: list, calls: int) -> str:
    names = sorted({e.name() for e in gpu_events})
    shown = ", ".join(name[:60] for name in names[:8])
    return f"{len(gpu_events)} GPU activities for {calls} iterations; names: {shown}"


def device_time(fn, quick: bool = False) -> DeviceTime:
    """Median, min and p90 device time of fn() in ms, with a cold L2 before every call.

    fn must be ready to run (compiled, autotuned); its first calls still count as warm-up.
    quick=True times the minimum 30 calls instead of filling 100 ms.
    """
    seconds_per_iteration = _warm_up(fn)
    calls = _timed_calls(seconds_per_iteration, quick)
    sums_ns = [sum(e.duration_ns() for e in iteration) for iteration in _profiled_iterations(fn, calls)]
    samples_ms = [ns / 1e6 for ns in sums_ns]
    return DeviceTime(
        median_ms=statistics.median(samples_ms),
        min_ms=min(samples_ms),
        p90_ms=statistics.quantiles(samples_ms, n=10, method="inclusive")[8],
        calls=calls,
    )


def activity_medians(fn, calls: int = MIN_TIMED_CALLS) -> list[tuple[str, float]]:
    """Each GPU activity of one call of fn (in launch order) and its median duration in µs, measured
    as device_time measures the whole call (cold L2 before every call): which kernel of a
    multi-kernel call takes the time."""
    _warm_up(fn)
    iterations = _profiled_iterations(fn, calls)
    return [(iterations[0][k].name(), statistics.median(it[k].duration_ns() for it in iterations) / 1e3)
            for k in range(len(iterations[0]))]


def host_inclusive_ms(fn, calls: int = 100, rounds: int = 5) -> float:
    """Wall time per call of `calls` back-to-back fn() calls, measured with CUDA events: the median
    of `rounds` rounds.

    Includes host launch overhead (whichever of host or device is slower sets the pace) and
    runs with a warm L2; it is a user-visible eager time, not the device time above. Garbage
    collection is paused during the rounds (collection_paused).
    """
    fn()
    torch.cuda.synchronize()
    per_call = []
    with collection_paused():
        for _ in range(rounds):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) / calls)
    return statistics.median(per_call)
