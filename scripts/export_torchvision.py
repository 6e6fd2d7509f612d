"""Exports the classic torchvision CNNs (and two small custom heads) to ONNX with the
PyTorch exporters, as acceptance material for Paleozoic.

Runs with a Python that has torch + torchvision (not the project's own environment), e.g.

    python -m venv /work/venv-torch
    /work/venv-torch/bin/pip install torch torchvision onnx onnxscript
    /work/venv-torch/bin/python scripts/export_torchvision.py -o /work/exported/torch

No pretrained weights are downloaded (weights=None, weights_backbone=None). Weights are
seeded; BatchNorm affine parameters are drawn at random and BatchNorm running statistics
are calibrated on a few seeded random batches (cumulative average in train mode), so
activations keep a sane scale through deep networks; then the model is put in eval mode.

Variants (--variants, comma separated):
    legacy13   TorchScript exporter (dynamo=False), opset 13   -> NAME_op13.onnx
    legacy17   TorchScript exporter (dynamo=False), opset 17   -> NAME_op17.onnx
    dynamo     torch.export-based exporter, its default opset  -> NAME_dynamo_opN.onnx
    dynamo13   torch.export-based exporter asked for opset 13  -> NAME_dynamo_op13.onnx
resnet18 and tiny_dethead are also exported with a dynamic batch axis, once per exporter:
    NAME_dynbatch_op13.onnx (legacy, dynamic_axes) and
    NAME_dynbatch_dynamo_opN.onnx (dynamo, dynamic_shapes; traced at batch 2).
The dynamo exporter cannot always down-convert to an older opset; it then keeps its own
(the table says "asked opset 13, got 18").
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torchvision
from torch import nn

from exporter_cli import exporter_parser, keep_or_replace, output_folder, print_table
from torch_export import seed_everything, start_torch

SEED = 0


# ---- small custom modules: decoder-style upsampling and a detection-like head -----------

class TinySegNet(nn.Module):
    """Encoder-decoder with ConvTranspose2d, nn.Upsample nearest and bilinear."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)    # 28 -> 56
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")           # 56 -> 112
        self.conv = nn.Sequential(nn.Conv2d(32, 16, 3, padding=1), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.up3 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.enc(x)
        y = torch.relu(self.up1(y))
        y = self.conv(self.up2(y))
        return self.head(self.up3(y))


class TinyDetHead(nn.Module):
    """SSD-like: a small backbone, two feature maps, class and box heads reshaped to
    (N, anchors, C) and concatenated; two outputs."""

    def __init__(self, classes: int = 4, anchors: int = 3) -> None:
        super().__init__()
        self.classes, self.anchors = classes, anchors
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=4, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=4, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU())
        self.cls = nn.ModuleList([nn.Conv2d(c, anchors * classes, 3, padding=1)
                                  for c in (32, 64)])
        self.box = nn.ModuleList([nn.Conv2d(c, anchors * 4, 3, padding=1) for c in (32, 64)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f1 = self.stem(x)
        f2 = self.down(f1)
        cls, box = [], []
        for f, c, b in zip((f1, f2), self.cls, self.box):
            n = f.shape[0]
            cls.append(c(f).permute(0, 2, 3, 1).reshape(n, -1, self.classes))
            box.append(b(f).permute(0, 2, 3, 1).reshape(n, -1, 4))
        return torch.sigmoid(torch.cat(cls, 1)), torch.cat(box, 1)


class OutTensor(nn.Module):
    """Segmentation models return {"out": ...}; export the tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)["out"]


# ---- the model list ---------------------------------------------------------------------

Entry = tuple[str, tuple[Callable[[], nn.Module], int]]   # name, (factory, input side)


def _tv(name: str, side: int = 224, **kw) -> Entry:
    """torchvision.models' constructor `name`, untrained, under its own name."""
    return name, (lambda: getattr(torchvision.models, name)(weights=None, **kw), side)


def _tvs(*names: str) -> list[Entry]:
    return [_tv(name) for name in names]


def _seg(name: str, **kw) -> Entry:
    return name, (lambda: OutTensor(getattr(torchvision.models.segmentation, name)(
        weights=None, weights_backbone=None, **kw)), 224)


MODELS: dict[str, tuple[Callable[[], nn.Module], int]] = dict([   # name -> (factory, side)
    *_tvs("alexnet", "vgg11", "vgg16", "resnet18", "resnet50", "resnext50_32x4d",
          "squeezenet1_0", "squeezenet1_1", "densenet121"),
    _tv("inception_v3", 299, aux_logits=False, init_weights=True),
    _tv("googlenet", aux_logits=False, init_weights=True),
    *_tvs("mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x1_0", "efficientnet_b0",
          "mnasnet1_0", "regnet_y_400mf"),
    _seg("lraspp_mobilenet_v3_large", num_classes=21),
    _seg("deeplabv3_mobilenet_v3_large", num_classes=21, aux_loss=False),
    ("tiny_segnet", (TinySegNet, 224)),
    ("tiny_dethead", (TinyDetHead, 224)),
])

VARIANTS = ("legacy13", "legacy17", "dynamo", "dynamo13")
DYNBATCH = ("resnet18", "tiny_dethead")   # also exported with a dynamic batch axis


# ---- weights ----------------------------------------------------------------------------

@torch.no_grad()
def prepare(model: nn.Module, side: int, calib_batches: int = 2, calib_batch: int = 4
            ) -> nn.Module:
    """Random BN affine params, BN running stats calibrated on seeded random data, eval."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        if bn.affine:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
        bn.reset_running_stats()
        bn.momentum = None                      # cumulative moving average
    if bns:
        model.train()
        gen = torch.Generator().manual_seed(SEED + 1)
        for _ in range(calib_batches):
            model(torch.randn(calib_batch, 3, side, side, generator=gen))
    model.eval()
    for bn in bns:
        bn.momentum = 0.1
    return model


def output_stats(outputs) -> str:
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    return "; ".join(f"|y| mean {o.abs().mean().item():.3g} std {o.std().item():.3g}"
                     for o in outs)


# ---- exporting --------------------------------------------------------------------------

def output_names(sample_out) -> list[str]:
    n = len(sample_out) if isinstance(sample_out, (tuple, list)) else 1
    return ["output"] if n == 1 else [f"output{i}" for i in range(n)]


def export_one(model: nn.Module, x: torch.Tensor, path: Path, variant: str, n_out: int,
               dynamic_batch: bool = False) -> int:
    """Exports; returns the opset written."""
    import onnx

    names = ["output"] if n_out == 1 else [f"output{i}" for i in range(n_out)]
    kwargs: dict = {"input_names": ["input"], "output_names": names}
    if variant.startswith("legacy"):
        kwargs.update(dynamo=False, opset_version=int(variant[len("legacy"):]),
                      do_constant_folding=True)
        if dynamic_batch:
            kwargs["dynamic_axes"] = {n: {0: "batch"} for n in ["input", *names]}
    else:
        kwargs.update(dynamo=True, external_data=False)
        if variant != "dynamo":
            kwargs["opset_version"] = int(variant[len("dynamo"):])
        if dynamic_batch:
            kwargs["dynamic_shapes"] = {"x": {0: torch.export.Dim("batch", min=1, max=64)}}
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), **kwargs)
    proto = onnx.load(str(path), load_external_data=False)
    return next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))


def file_name(name: str, variant: str, opset: int) -> str:
    return f"{name}_op{opset}.onnx" if variant.startswith("legacy") else \
        f"{name}_dynamo_op{opset}.onnx"


def main(argv: list[str] | None = None) -> int:
    parser = exporter_parser(__doc__, "/work/exported/torch", MODELS)
    parser.add_argument("--variants", default="legacy13,legacy17,dynamo",
                        help=f"comma-separated subset of: {', '.join(VARIANTS)}")
    parser.add_argument("--no-dynbatch", action="store_true",
                        help=f"skip the dynamic-batch exports of {', '.join(DYNBATCH)}")
    parser.add_argument("--force", action="store_true", help="re-export existing files")
    args = parser.parse_args(argv)

    out = output_folder(args.out)
    names = [n for n in args.models.split(",") if n]
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if not re.fullmatch(r"legacy\d+|dynamo\d*", v):
            parser.error(f"unknown variant {v}")
    start_torch()

    rows: list[tuple[str, str, str, str, str, str]] = []
    for name in names:
        factory, side = MODELS[name]
        seed_everything()
        try:
            model = prepare(factory(), side)
            x = torch.randn(1, 3, side, side, generator=torch.Generator().manual_seed(SEED))
            with torch.no_grad():
                ref = model(x)
            stats = output_stats(ref)
            n_out = len(ref) if isinstance(ref, (tuple, list)) else 1
        except Exception as err:  # noqa: BLE001
            rows.append((name, "-", "-", "FAILED (build model)", "-",
                         f"{type(err).__name__}: {err}".splitlines()[0][:120]))
            continue
        jobs = [(v, False) for v in variants]
        if name in DYNBATCH and not args.no_dynbatch:
            jobs += [("legacy13", True), ("dynamo", True)]
        for variant, dyn in jobs:
            label = name + ("_dynbatch" if dyn else "")
            tmp = out / f".{label}.{variant}.tmp.onnx"
            t0 = time.perf_counter()
            try:
                xin = torch.cat([x, x]) if dyn and variant.startswith("dynamo") else x
                opset = export_one(model, xin, tmp, variant, n_out, dynamic_batch=dyn)
                final = out / file_name(label, variant, opset)
                status = keep_or_replace(tmp, final, args.force)
                asked = re.sub(r"\D", "", variant)
                if asked and int(asked) != opset:
                    status += f" (asked opset {asked}, got {opset})"
                size = f"{final.stat().st_size / 2**20:.1f} MB"
                rows.append((label, variant, str(opset), status,
                             f"{time.perf_counter() - t0:.1f}s", f"{final.name} {size}; {stats}"))
            except Exception as err:  # noqa: BLE001
                tmp.unlink(missing_ok=True)
                msg = f"{type(err).__name__}: {err}".strip().splitlines()
                rows.append((label, variant, "-", "FAILED", f"{time.perf_counter() - t0:.1f}s",
                             " | ".join(msg[:2])[:200]))
                traceback.print_exc(limit=2, file=sys.stderr)
            print(" | ".join(rows[-1]), flush=True)

    print_table(("model", "exporter", "opset", "status", "time", "file / note"),
                ("opset", "time"), rows, status_column=3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
