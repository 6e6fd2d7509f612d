"""Each layer kind's fp32 error against float64 is at onnxruntime's level on inputs that
stress precision (paleozoic.testing.precision builds the cases; one g++ build for all)."""

from __future__ import annotations

import pytest

from paleozoic.testing.precision import kind_cases, markdown_table, measure


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return measure(kind_cases(seed=0), tmp_path_factory.mktemp("precision") / "session")


def test_every_kind_is_as_accurate_as_onnxruntime(rows):
    worse = [r for r in rows if not r.passed]
    assert not worse, "\n" + markdown_table(worse)


def test_the_cases_that_found_defects_are_there(rows):
    """The long float sums these exposed (a global average over 56 x 56, a bias added
    before 4,608 products, VGG's 25,088-long dot product) stay measured."""
    names = {r.name for r in rows}
    assert {"global_avgpool_56x56_offset", "reducemean_hw_offset", "conv3x3_bias_offset",
            "gemm_k25088_positive", "conv3x3_k4608_positive"} <= names
    by_name = {r.name: r for r in rows}
    # Accumulated in double, the mean of 3,136 values is rounded once.
    assert by_name["reducemean_hw_offset"].ours <= 2.0 ** -23
