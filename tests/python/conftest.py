"""Markers of the Python tests. `needs_shared`: the test reads ../shared (the spec and the workload
catalogue), which only the CPU machines have; scripts/device-check.sh deselects these on the GPU
machine with `-m "not needs_shared"`."""


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_shared: reads ../shared, present on the CPU machines only")
