"""Hypothesis profiles for the fuzz tests: "ci" (the default: fixed seed, a few examples,
fast) and "long" (>= 1,000 graphs; `pytest tests/robustness/test_fuzz.py
--hypothesis-profile long` or scripts/fuzz_long.py)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=40, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=int(os.environ.get("PZ_FUZZ_EXAMPLES", "1000")), derandomize=False, **_COMMON)


def pytest_configure(config: object) -> None:
    name = config.getoption("hypothesis_profile", None) or "ci"  # type: ignore[attr-defined]
    settings.load_profile(name)
