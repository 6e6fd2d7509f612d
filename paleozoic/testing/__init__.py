"""Helpers for tests, benchmarks and the demo: seeded model zoo and input generation."""
