"""Seeded inputs for integer graph inputs (what `paleozoic verify` feeds): ids within the
Gather table that consumes them (through casts and reshapes), uint8 pixels over 0..255,
and 0/1 masks that really mask."""

from __future__ import annotations

import numpy as np

from paleozoic_testing.bert import BERT_INPUTS, bert_model
from paleozoic_testing.host import uint8_classifier
from paleozoic.accuracy.inputs import integer_input_ranges, random_inputs


def test_ids_stay_inside_their_tables_and_masks_mask() -> None:
    model = bert_model(seed=0, vocab=37)
    assert integer_input_ranges(model) == {"input_ids": 37, "token_type_ids": 2}
    feeds = random_inputs(model, 0, {n: (4, 24) for n in BERT_INPUTS})
    assert feeds["input_ids"].dtype == np.int64
    assert 0 <= feeds["input_ids"].min() and feeds["input_ids"].max() < 37
    assert feeds["input_ids"].max() > 30  # the whole vocabulary, not a corner of it
    assert set(np.unique(feeds["token_type_ids"])) == {0, 1}
    mask = feeds["attention_mask"]
    assert set(np.unique(mask)) == {0, 1} and (mask[:, 0] == 1).all()
    # Each row: a prefix of ones, then zeros (padding).
    assert all((np.diff(row) <= 0).all() for row in mask)


def test_uint8_pixels_cover_their_range() -> None:
    image = random_inputs(uint8_classifier(seed=0, batch=8), 0)["image"]
    assert image.dtype == np.uint8 and image.min() < 10 and image.max() > 245
