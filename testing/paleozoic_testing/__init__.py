"""Helpers for tests, benchmarks, scripts and the demo: the seeded model zoo, workload builders
and precision cases. Installed apart from the library (`pip install ./testing`), never
imported by it."""
