"""The benchmark's eager wall time per call (solops.bench.timing.host_inclusive_ms): its rounds and
its garbage-collection pause. Needs PyTorch but no GPU: CUDA events and synchronize are stand-ins
that read a clock which the calls advance."""

import gc

import pytest

torch = pytest.importorskip("torch")
from solops.bench import timing  # noqa: E402


def test_host_time_is_the_median_round_with_collection_paused(monkeypatch) -> None:
    calls, per_call_ms_by_round = 4, [0.010, 0.030, 0.011, 0.012, 0.500]
    clock = {"ms": 0.0}
    collecting = []

    def fn():
        # Call 0 is the warm-up; round r holds calls 1 + r * calls ... (r + 1) * calls.
        round_index = (len(collecting) - 1) // calls
        collecting.append(gc.isenabled())
        if len(collecting) > 1:
            clock["ms"] += per_call_ms_by_round[round_index]

    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = clock["ms"]

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.at - self.at

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    assert gc.isenabled()
    assert timing.host_inclusive_ms(fn, calls=calls, rounds=5) == pytest.approx(0.012)
    assert len(collecting) == 1 + 5 * calls
    assert collecting[0] and not any(collecting[1:])  # paused for the rounds only
    assert gc.isenabled()
