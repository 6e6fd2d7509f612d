"""paleozoic_testing.ocr: the rendered data is deterministic and labelled right, its
preprocessing is RapidOCR's own (compared with rapidocr_onnxruntime's code), and the
metrics count what they say."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from paleozoic_testing import ocr

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_onnxruntime") is None,
    reason="rapidocr_onnxruntime is not installed (the test extra installs it on "
           "Python < 3.13; it brings the PP-OCR models, OpenCV and Pillow)")


def test_rendering_is_deterministic_and_balanced() -> None:
    a, b = ocr.classifier_data(16, seed=3), ocr.classifier_data(16, seed=3)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
    assert a.images.shape == (16, *ocr.CLASSIFIER_SHAPE) and a.images.dtype == np.float32
    assert int(a.labels.sum()) == 8  # half turned 180 degrees
    assert not np.array_equal(a.images, ocr.classifier_data(16, seed=4).images)
    pages = ocr.detector_data(4, seed=3)
    assert np.array_equal(pages.images, ocr.detector_data(4, seed=3).images)
    assert pages.images.shape == (4, 3, *ocr.DETECTOR_SIZE)
    assert pages.masks.shape == (4, *ocr.DETECTOR_SIZE) and pages.masks.any(axis=(1, 2)).all()


def test_upside_down_lines_are_the_upright_ones_turned() -> None:
    """The same draws with and without the 180 degree turn: turned back, the line matches
    the upright one (up to the tint, gradient and noise, drawn after the turn); as it is,
    it does not."""
    def grey(image: np.ndarray) -> np.ndarray:
        return image.astype(np.float64).mean(axis=2).ravel()

    for seed in range(4):
        upright, text = ocr.render_line(np.random.default_rng(seed), upside_down=False)
        turned, same = ocr.render_line(np.random.default_rng(seed), upside_down=True)
        assert text == same and upright.shape == turned.shape
        back = np.corrcoef(grey(upright), grey(turned[::-1, ::-1]))[0, 1]
        as_is = np.corrcoef(grey(upright), grey(turned))[0, 1]
        assert back > 0.9 and as_is < 0.5, (seed, back, as_is)


def _grow(mask: np.ndarray) -> np.ndarray:
    """The mask and its 8 neighbours' pixels (one-pixel dilation)."""
    padded = np.pad(mask, 1)
    h, w = mask.shape
    return np.any([padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)], axis=0)


def test_boxes_cover_the_ink() -> None:
    """Every dark pixel lies in a drawn box or on its edge (the rotated glyphs' antialiased
    rim can reach one pixel past the polygon); the boxes cover well under half a page."""
    pages = ocr.detector_data(8, seed=1)
    for page, mask in zip(pages.pages, pages.masks):
        grey = page.astype(np.float64).mean(axis=2)
        ink = grey < np.median(grey) - 35  # well below the background
        assert np.mean(mask[ink]) > 0.95
        assert np.mean(_grow(mask)[ink]) > 0.995
        assert mask.mean() < 0.5


def test_preprocessing_is_rapidocrs() -> None:
    """classifier_input and detector_input give RapidOCR's own preprocessing bit for bit."""
    from rapidocr_onnxruntime.ch_ppocr_cls.text_cls import TextClassifier
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess

    data = ocr.classifier_data(8, seed=2)
    theirs = SimpleNamespace(cls_image_shape=list(ocr.CLASSIFIER_SHAPE))
    for line, ours in zip(data.lines, data.images):
        assert np.array_equal(ours, TextClassifier.resize_norm_img(theirs, line))
    pages = ocr.detector_data(2, seed=2)
    for limit in (None, 160):
        side = max(ocr.DETECTOR_SIZE) if limit is None else limit
        preprocess = DetPreProcess(side, "max", list(ocr.DETECTOR_MEAN), list(ocr.DETECTOR_STD))
        for page in pages.pages:
            assert np.array_equal(ocr.detector_input(page, limit), preprocess(page)[0])


def test_model_path_finds_the_wheels_models() -> None:
    for name in (ocr.CLASSIFIER, ocr.DETECTOR):
        assert ocr.model_path(name).is_file()
    with pytest.raises(FileNotFoundError, match="no_such.onnx"):
        ocr.model_path("no_such.onnx")


def test_metrics() -> None:
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    ref = np.array([[0.8, 0.2], [0.4, 0.6], [0.4, 0.6], [0.1, 0.9]])
    assert ocr.classifier_agreement(probs, ref) == 0.75
    assert ocr.classifier_accuracy(probs, np.array([0, 1, 1, 1])) == 0.75
    maps = np.zeros((2, 1, 4, 4), dtype=np.float32)
    assert ocr.map_iou(maps, maps) == 1.0  # nothing detected by either
    a, b = maps.copy(), maps.copy()
    a[0, 0, :2] = 0.9  # 8 pixels
    b[0, 0, 1:3] = 0.31  # 8 pixels, 4 shared
    assert ocr.map_iou(a, b) == pytest.approx(4 / 12)
    assert ocr.map_iou(a, b, threshold=0.5) == 0.0
    assert ocr.mask_iou(a, a[:, 0] > 0.5) == 1.0
