"""Real data for accuracy: the trained PP-OCR networks shipped in the rapidocr_onnxruntime
wheel, fed with text images Pillow renders, and the metrics the precision work measures.

Two networks (found in the installed package at run time, `model_path`):

* the text-direction classifier ch_ppocr_mobile_v2.0_cls_infer.onnx: one text line,
  N x 3 x 48 x 192 in, softmax over ("0", "180") out;
* the DBNet text detector ch_PP-OCRv4_det_infer.onnx: a page, N x 3 x H x W in (H, W
  multiples of 32), a text-probability map N x 1 x H x W out.

The images are deterministic for a seed: a seeded mix of words and digit groups, font sizes,
slight rotations, background and ink levels (contrast), a background gradient and Gaussian
noise, in Pillow's own scalable font (ImageFont.load_default(size=...), Pillow >= 10.1),
never a system font. Half the classifier's lines are turned 180 degrees (label 1).

Preprocessing is RapidOCR's own (rapidocr_onnxruntime 1.4: ch_ppocr_cls/text_cls.py and
ch_ppocr_det/utils.py, with its config.yaml), on BGR uint8 images as its LoadImage makes of
a Pillow image:

* classifier: cv2.resize (bilinear) to height 48 and width min(192, ceil(48 * w / h)),
  x / 255, then (x - 0.5) / 0.5, zero padding on the right up to 192;
* detector: cv2.resize to a multiple of 32 per side (RapidOCR's DetPreProcess; the pages
  are drawn at the network size, so with limit_type "max" it is the identity), x / 255,
  then (x - mean) / std with RapidOCR's mean = std = (0.5, 0.5, 0.5) (its config.yaml;
  PaddleOCR's own detector config uses ImageNet's, RapidOCR's shipped pipeline does not).

Metrics: the classifier's agreement with a reference (fraction of images whose argmax is
the reference's) and accuracy against the true orientation; the detector's map IoU, the
IoU of the probability maps thresholded at DBNet's 0.3 (RapidOCR's `thresh`) between a
session and a reference, and the same IoU against the drawn text-box mask (a sanity check:
DBNet's map covers a shrunk text region, so it is well below 1 even for onnxruntime).

    from paleozoic_testing import ocr
    data = ocr.classifier_data(64, seed=0)   # data.images: 64 x 3 x 48 x 192 float32
    pages = ocr.detector_data(8, seed=0)     # pages.images: 8 x 3 x 96 x 320 float32
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PACKAGE = "rapidocr_onnxruntime"
CLASSIFIER = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
DETECTOR = "ch_PP-OCRv4_det_infer.onnx"
INPUT_NAME = "x"  # both networks' input
CLASSIFIER_SHAPE = (3, 48, 192)  # RapidOCR's cls_image_shape
CLASSIFIER_LABELS = ("0", "180")  # RapidOCR's label_list
DETECTOR_SIZE = (96, 320)  # height, width: small enough for CI, multiples of 32
DETECTOR_MEAN = (0.5, 0.5, 0.5)  # RapidOCR's config.yaml, Det.mean
DETECTOR_STD = (0.5, 0.5, 0.5)  # Det.std
DB_THRESHOLD = 0.3  # DBNet's binarisation threshold, RapidOCR's Det.thresh

WORDS = (
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "text", "line", "model",
    "paper", "invoice", "total", "date", "amount", "order", "number", "street", "account",
    "price", "please", "receipt", "balance", "March", "London", "Station", "Report", "Page",
    "Open", "Hello", "World", "OCR", "ONNX", "Tensor", "Session", "layer", "image", "signal",
    "north", "garden", "window", "river", "copper", "silver", "orange", "yellow", "purple",
)


@dataclass(frozen=True)
class ClassifierData:
    """Text lines for the direction classifier."""

    images: np.ndarray  # N x 3 x 48 x 192 float32, preprocessed as RapidOCR does
    labels: np.ndarray  # N int64: 0 upright, 1 turned 180 degrees (CLASSIFIER_LABELS)
    lines: list[np.ndarray]  # the rendered lines, H x W x 3 uint8 BGR, before preprocessing
    texts: list[str]


@dataclass(frozen=True)
class DetectorData:
    """Pages of text lines for the detector."""

    images: np.ndarray  # N x 3 x H x W float32, preprocessed as RapidOCR does
    masks: np.ndarray  # N x H x W bool: inside a drawn line's box
    boxes: list[list[np.ndarray]]  # per page, each line's box: 4 x 2 float (x, y) corners
    pages: np.ndarray  # N x H x W x 3 uint8 BGR, before preprocessing
    texts: list[list[str]]


# ---- models --------------------------------------------------------------------------------

def model_path(name: str) -> Path:
    """The path of one of the wheel's models (CLASSIFIER, DETECTOR) in the installed
    rapidocr_onnxruntime package, found without importing it (importing it loads OpenCV)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"{PACKAGE} is not installed: the PP-OCR models come from its wheel "
            f"(pip install '.[test]' or pip install {PACKAGE})")
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the installed {PACKAGE} has no {name}")
    return path


# ---- rendering -----------------------------------------------------------------------------

def _font(size: int):
    from PIL import ImageFont

    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):
        raise RuntimeError(  # noqa: TRY004 (the environment, not the argument)"Pillow has no FreeType support here: load_default(size=...) "
                           "falls back to a fixed bitmap font; install a Pillow >= 10.1 "
                           "wheel (they bundle FreeType)")
    return font


def _text(rng: np.random.Generator, words: int) -> str:
    tokens = []
    for _ in range(words):
        if rng.random() < 0.3:
            tokens.append(str(int(rng.integers(0, 10 ** int(rng.integers(1, 6))))))
        else:
            word = WORDS[int(rng.integers(len(WORDS)))]
            tokens.append(word.upper() if rng.random() < 0.15 else word)
    return " ".join(tokens)


def _levels(rng: np.random.Generator) -> tuple[float, float]:
    """Background and ink grey levels: dark ink on a light ground, contrast 70 to 250."""
    background = float(rng.uniform(150.0, 255.0))
    ink = float(rng.uniform(0.0, background - 70.0))
    return background, ink


def _finish(grey: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Grey H x W float image -> H x W x 3 uint8 BGR: a slight per-channel tint, a linear
    background gradient, Gaussian noise (sigma 0 to 10)."""
    h, w = grey.shape
    gradient = (rng.uniform(-20.0, 20.0) * np.linspace(-0.5, 0.5, w)[None, :]
                + rng.uniform(-20.0, 20.0) * np.linspace(-0.5, 0.5, h)[:, None])
    tint = rng.uniform(-12.0, 12.0, size=3)
    sigma = float(rng.uniform(0.0, 10.0))
    rgb = grey[:, :, None] + gradient[:, :, None] + tint[None, None, :]
    rgb = rgb + rng.normal(0.0, 1.0, size=rgb.shape) * sigma
    rgb = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1])  # RGB -> BGR, as RapidOCR's LoadImage


def render_line(rng: np.random.Generator, upside_down: bool) -> tuple[np.ndarray, str]:
    """One cropped text line, H x W x 3 uint8 BGR: 1 to 4 tokens, font size 16 to 40, a
    margin of 10 to 35 % of the size, rotated by -3 to 3 degrees, turned 180 degrees if
    `upside_down`."""
    from PIL import Image, ImageDraw

    text = _text(rng, int(rng.integers(1, 5)))
    size = int(rng.integers(16, 41))
    font = _font(size)
    background, ink = _levels(rng)
    left, top, right, bottom = font.getbbox(text)
    margin_x = round(size * rng.uniform(0.1, 0.35))
    margin_y = round(size * rng.uniform(0.1, 0.35))
    alpha = Image.new("L", (right - left + 2 * margin_x, bottom - top + 2 * margin_y), 0)
    ImageDraw.Draw(alpha).text((margin_x - left, margin_y - top), text, font=font, fill=255)
    angle = float(rng.uniform(-3.0, 3.0))
    alpha = alpha.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=0)
    a = np.asarray(alpha, dtype=np.float64) / 255.0
    grey = background * (1.0 - a) + ink * a
    if upside_down:
        grey = grey[::-1, ::-1]  # what cv2.rotate(img, cv2.ROTATE_180) does
    return _finish(grey, rng), text


def _rotate(points: np.ndarray, centre: tuple[float, float], angle: float) -> np.ndarray:
    """Points (x, y) turned about `centre` as Pillow's Image.rotate(angle) turns pixels
    (counter-clockwise on screen, with y pointing down)."""
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    d = points - np.asarray(centre)
    return np.stack([d[:, 0] * c + d[:, 1] * s, -d[:, 0] * s + d[:, 1] * c], axis=1) + centre


def render_page(rng: np.random.Generator, size: tuple[int, int] = DETECTOR_SIZE
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[str]]:
    """One page, H x W x 3 uint8 BGR, with 1 to 3 text lines one under another, each at a
    font size of 14 to 28, turned by -4 to 4 degrees about its centre; returns the page, its
    mask (inside a line's box), the boxes (4 x 2 corners x, y: the ink's bounding box
    turned with it) and the texts."""
    from PIL import Image, ImageDraw

    height, width = size
    background, ink = _levels(rng)
    lines = int(rng.integers(1, 4))
    band = height / lines
    alpha = np.zeros((height, width))
    mask = Image.new("L", (width, height), 0)
    boxes, texts = [], []
    for index in range(lines):
        font_size = int(rng.integers(14, min(29, int(band * 0.75)) + 1))
        font = _font(font_size)
        text = _text(rng, int(rng.integers(1, 5)))
        while len(text.split()) > 1 and font.getlength(text) > width * 0.9:
            text = text.rsplit(" ", 1)[0]
        while font.getlength(text) > width * 0.9:
            text = text[:-1]
        left, top, right, bottom = font.getbbox(text)
        x = float(rng.uniform(4.0, max(4.0, width - (right - left) - 4.0)))
        y = index * band + float(rng.uniform(0.0, max(0.0, band - (bottom - top))))
        layer = Image.new("L", (width, height), 0)
        ImageDraw.Draw(layer).text((x - left, y - top), text, font=font, fill=255)
        box = np.array([[x, y], [x + right - left, y], [x + right - left, y + bottom - top],
                        [x, y + bottom - top]])
        centre = (float(box[:, 0].mean()), float(box[:, 1].mean()))
        angle = float(rng.uniform(-4.0, 4.0))
        layer = layer.rotate(angle, resample=Image.Resampling.BICUBIC, center=centre)
        box = _rotate(box, centre, angle)
        alpha = np.maximum(alpha, np.asarray(layer, dtype=np.float64) / 255.0)
        ImageDraw.Draw(mask).polygon([tuple(p) for p in box], fill=255)
        boxes.append(box)
        texts.append(text)
    page = _finish(background * (1.0 - alpha) + ink * alpha, rng)
    return page, np.asarray(mask) > 0, boxes, texts


# ---- preprocessing (RapidOCR's) ------------------------------------------------------------

def classifier_input(line: np.ndarray) -> np.ndarray:
    """One BGR uint8 line -> 3 x 48 x 192 float32, as RapidOCR's
    TextClassifier.resize_norm_img: resize to height 48 keeping the aspect ratio (width at
    most 192), x / 255, (x - 0.5) / 0.5, zeros on the right."""
    import cv2

    channels, height, width = CLASSIFIER_SHAPE
    h, w = line.shape[:2]
    resized_w = min(width, math.ceil(height * w / float(h)))
    resized = cv2.resize(line, (resized_w, height)).astype(np.float32)
    resized = resized.transpose((2, 0, 1)) / 255
    resized -= 0.5
    resized /= 0.5
    out = np.zeros((channels, height, width), dtype=np.float32)
    out[:, :, :resized_w] = resized
    return out


def detector_input(page: np.ndarray, limit_side_len: int | None = None) -> np.ndarray:
    """One BGR uint8 page -> 3 x H x W float32, as RapidOCR's DetPreProcess with
    limit_type "max": scaled down so its longer side is at most `limit_side_len` (default:
    its longer side, no scaling), each side rounded to a multiple of 32 (cv2.resize,
    bilinear), x / 255, (x - mean) / std with RapidOCR's mean and std."""
    import cv2

    h, w = page.shape[:2]
    limit = max(h, w) if limit_side_len is None else limit_side_len
    ratio = limit / max(h, w) if max(h, w) > limit else 1.0
    resize_h = round(int(h * ratio) / 32) * 32
    resize_w = round(int(w * ratio) / 32) * 32
    if resize_h <= 0 or resize_w <= 0:
        raise ValueError(f"a {h} x {w} page is too small for the detector")
    resized = cv2.resize(page, (resize_w, resize_h))
    scaled = resized.astype(np.float32) * (1 / 255.0)
    normalised = (scaled - np.array(DETECTOR_MEAN)) / np.array(DETECTOR_STD)
    return normalised.transpose((2, 0, 1)).astype(np.float32)


# ---- data sets -----------------------------------------------------------------------------

def classifier_data(count: int, seed: int = 0) -> ClassifierData:
    """`count` rendered lines, half of them (chosen by the seed) turned 180 degrees."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(count) % 2).astype(np.int64)
    lines, texts = [], []
    for label in labels:
        line, text = render_line(rng, upside_down=bool(label))
        lines.append(line)
        texts.append(text)
    images = np.stack([classifier_input(line) for line in lines]) if lines else \
        np.zeros((0, *CLASSIFIER_SHAPE), dtype=np.float32)
    return ClassifierData(images=images, labels=labels, lines=lines, texts=texts)


def detector_data(count: int, seed: int = 0, size: tuple[int, int] = DETECTOR_SIZE
                  ) -> DetectorData:
    """`count` rendered pages of `size` (height, width; multiples of 32)."""
    if size[0] % 32 or size[1] % 32:
        raise ValueError(f"the detector's input sides must be multiples of 32, not {size}")
    rng = np.random.default_rng(seed)
    rendered = [render_page(rng, size) for _ in range(count)]
    pages = np.stack([page for page, _, _, _ in rendered]) if rendered else \
        np.zeros((0, *size, 3), dtype=np.uint8)
    images = np.stack([detector_input(page) for page in pages]) if rendered else \
        np.zeros((0, 3, *size), dtype=np.float32)
    return DetectorData(images=images, masks=np.stack([m for _, m, _, _ in rendered]) if
                        rendered else np.zeros((0, *size), dtype=bool),
                        boxes=[b for _, _, b, _ in rendered], pages=pages,
                        texts=[t for _, _, _, t in rendered])


def batches(images: np.ndarray, size: int) -> list[np.ndarray]:
    """`images` cut into batches of `size` along the first axis (a compiled session's
    batch is fixed, so the count must divide evenly)."""
    if len(images) % size:
        raise ValueError(f"{len(images)} images do not split into batches of {size}")
    return [np.ascontiguousarray(images[i:i + size]) for i in range(0, len(images), size)]


# ---- metrics -------------------------------------------------------------------------------

def classifier_agreement(probabilities: np.ndarray, reference: np.ndarray) -> float:
    """The fraction of images whose argmax class equals the reference's (N x 2 each)."""
    return float(np.mean(np.argmax(probabilities, axis=1) == np.argmax(reference, axis=1)))


def classifier_accuracy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """The fraction of images whose argmax class is the true orientation."""
    return float(np.mean(np.argmax(probabilities, axis=1) == labels))


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return 1.0 if union == 0 else float(np.logical_and(a, b).sum() / union)


def map_iou(maps: np.ndarray, reference: np.ndarray, threshold: float = DB_THRESHOLD) -> float:
    """IoU of two detectors' text regions, each its probability map (N x 1 x H x W or
    N x H x W) above `threshold`, counted over all pixels of all images (1.0 when both are
    empty)."""
    a = np.asarray(maps).reshape(len(maps), *np.shape(maps)[-2:]) > threshold
    b = np.asarray(reference).reshape(len(reference), *np.shape(reference)[-2:]) > threshold
    if a.shape != b.shape:
        raise ValueError(f"maps of shapes {a.shape} and {b.shape} do not compare")
    return _iou(a, b)


def mask_iou(maps: np.ndarray, masks: np.ndarray, threshold: float = DB_THRESHOLD) -> float:
    """IoU of a detector's text region (probability map above `threshold`) and the drawn
    text-box masks (N x H x W), over all pixels of all images."""
    a = np.asarray(maps).reshape(masks.shape) > threshold
    return _iou(a, np.asarray(masks, dtype=bool))
