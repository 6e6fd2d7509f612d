"""Exports the sequence and transformer models of issue 13 to ONNX with PyTorch's exporters,
as acceptance material for Paleozoic (scripts/exporter_acceptance.py reads the folder).

Runs with a Python that has torch, torchvision and transformers (not the project's own
environment), e.g.

    /work/venv-torch/bin/pip install torch torchvision transformers onnx onnxscript
    /work/venv-torch/bin/python scripts/export_sequence.py -o /work/exported/seq

Nothing is downloaded: the HuggingFace models are built from a config with seeded random
weights (BertConfig / DistilBertConfig defaults: the base sizes), the torchvision ones with
weights=None. BatchNorm-free models, so no calibration is needed. Sequence models keep a
symbolic sequence axis (and batch axis): compile them with `--input-shape NAME=1x128`.

Models:
    bert          transformers BertModel (base config), inputs input_ids, attention_mask
    distilbert    transformers DistilBertModel (base config), same inputs
    vit_b_16      torchvision ViT-B/16, 1x3x224x224
    swin_t        torchvision Swin-T, 1x3x224x224
    convnext_tiny torchvision ConvNeXt-Tiny, 1x3x224x224
    lstm          2-layer bidirectional LSTM classifier over 40-dim features (batch_first)
    gru           2-layer GRU classifier over 40-dim features (sequence first)
    wav2vec2      transformers Wav2Vec2Model from a small Wav2Vec2Config (conv feature
                  encoder of 7 Conv1d with GroupNorm on the first, 256 channels; 2 encoder
                  layers of hidden size 256), raw audio input_values 1x16000 (static)
    tcn           a temporal conv net: Conv1d/BatchNorm1d/ReLU x 3 (dilated, strided),
                  MaxPool1d, global average pool, Linear; input 1x40x200 (static)
The PP-OCRv4 recogniser is not exported: it ships trained in the rapidocr_onnxruntime wheel
(`rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx`); --copy-ppocr copies it here.

Variants: legacy17 (TorchScript exporter, opset 17) -> NAME_op17.onnx; dynamo (torch.export
exporter, its default opset) -> NAME_dynamo_opN.onnx.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torchvision
from torch import nn

from exporter_cli import exporter_parser, keep_or_replace, output_folder, report_failure
from torch_export import no_zero_weights, randomise_norm_stats, seed_everything, start_torch

SEED = 0
SEQ = 128           # traced sequence length (the exported axis stays symbolic)
FEATURES = 40       # per-step features of the recurrent models (a filterbank frame)


class LstmClassifier(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.rnn = nn.LSTM(FEATURES, 96, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * 96, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


class GruClassifier(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.rnn = nn.GRU(FEATURES, 80, num_layers=2)
        self.head = nn.Linear(80, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h = self.rnn(x)
        return self.head(h[-1])


class TemporalConvNet(nn.Module):
    """Conv1d/BatchNorm1d/ReLU blocks over [N, features, frames], then pooling and a
    classifier (keyword spotting, speaker or event classification)."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()

        def block(cin: int, cout: int, k: int, stride: int = 1, dilation: int = 1) -> nn.Module:
            pad = dilation * (k - 1) // 2
            return nn.Sequential(nn.Conv1d(cin, cout, k, stride, pad, dilation, bias=False),
                                 nn.BatchNorm1d(cout), nn.ReLU())

        self.body = nn.Sequential(block(FEATURES, 64, 5), block(64, 64, 3, dilation=2),
                                  block(64, 128, 3, stride=2), nn.MaxPool1d(2),
                                  block(128, 128, 3, dilation=4), nn.AdaptiveAvgPool1d(1))
        self.head = nn.Linear(128, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.body(x), 1))


class HfAudio(nn.Module):
    """A HuggingFace audio model returning its last hidden state as one tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self.model(input_values)[0]


def _wav2vec2() -> nn.Module:
    import transformers

    config = transformers.Wav2Vec2Config(
        hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024,
        conv_dim=(256,) * 7, feat_extract_norm="group", num_conv_pos_embeddings=128,
        num_conv_pos_embedding_groups=16)
    return HfAudio(transformers.Wav2Vec2Model(config))


class HfOutput(nn.Module):
    """A HuggingFace model returning its last hidden state as one tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def _hf(kind: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import transformers

        if kind == "bert":
            model = transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False)
        else:
            model = transformers.DistilBertModel(transformers.DistilBertConfig())
        return HfOutput(model)
    return build


def _tv(name: str) -> Callable[[], nn.Module]:
    return lambda: getattr(torchvision.models, name)(weights=None)


Spec = tuple[Callable[[], nn.Module], str]   # factory, input kind
MODELS: dict[str, Spec] = {
    "bert": (_hf("bert"), "tokens"),
    "distilbert": (_hf("distilbert"), "tokens"),
    "vit_b_16": (_tv("vit_b_16"), "image"),
    "swin_t": (_tv("swin_t"), "image"),
    "convnext_tiny": (_tv("convnext_tiny"), "image"),
    "lstm": (LstmClassifier, "frames_batch_first"),
    "gru": (GruClassifier, "frames_seq_first"),
    "wav2vec2": (_wav2vec2, "audio"),
    "tcn": (lambda: randomise_norm_stats(TemporalConvNet()), "features_channels_first"),
}
VARIANTS = ("legacy17", "dynamo")


def example(kind: str) -> tuple[tuple[torch.Tensor, ...], list[str], dict]:
    """Inputs, input names and the legacy exporter's dynamic axes for one input kind."""
    gen = torch.Generator().manual_seed(SEED)
    if kind == "tokens":
        ids = torch.randint(0, 30522, (1, SEQ), generator=gen)
        mask = torch.ones(1, SEQ, dtype=torch.int64)
        mask[:, SEQ - 17:] = 0   # padding at the end, as a tokenizer batch has
        axes = {"input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"}}
        return (ids, mask), ["input_ids", "attention_mask"], axes
    if kind == "image":
        return (torch.randn(1, 3, 224, 224, generator=gen),), ["input"], {}
    if kind == "audio":
        return (torch.randn(1, 16000, generator=gen),), ["input_values"], {}
    if kind == "features_channels_first":
        return (torch.randn(1, FEATURES, 200, generator=gen),), ["input"], {}
    if kind == "frames_batch_first":
        return (torch.randn(1, 50, FEATURES, generator=gen),), ["input"], \
            {"input": {1: "sequence"}}
    return (torch.randn(50, 1, FEATURES, generator=gen),), ["input"], {"input": {0: "sequence"}}


def export_one(model: nn.Module, args: tuple[torch.Tensor, ...], names: list[str],
               axes: dict, path: Path, variant: str) -> int:
    import onnx

    kwargs: dict = {"input_names": names, "output_names": ["output"]}
    if variant == "legacy17":
        kwargs.update(dynamo=False, opset_version=17, do_constant_folding=True)
        if axes:
            kwargs["dynamic_axes"] = axes
    else:
        kwargs.update(dynamo=True, external_data=False)
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), **kwargs)
    proto = onnx.load(str(path), load_external_data=False)
    return next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))


def copy_ppocr(out: Path) -> str:
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or spec.origin is None:
        return "rapidocr_onnxruntime is not installed in this Python"
    source = Path(spec.origin).parent / "models" / "ch_PP-OCRv4_rec_infer.onnx"
    shutil.copyfile(source, out / "ppocrv4_rec.onnx")
    return f"copied {source}"


def main(argv: list[str] | None = None) -> int:
    parser = exporter_parser(__doc__, "/work/exported/seq", MODELS)
    parser.add_argument("--variants", default="legacy17",
                        help=f"comma-separated subset of: {', '.join(VARIANTS)}")
    parser.add_argument("--copy-ppocr", action="store_true",
                        help="also copy the PP-OCRv4 recogniser from rapidocr_onnxruntime")
    parser.add_argument("--force", action="store_true", help="re-export existing files")
    args = parser.parse_args(argv)

    start_torch()
    out = output_folder(args.out)
    if args.copy_ppocr:
        print(copy_ppocr(out), flush=True)
    failed = 0
    for name in (n for n in args.models.split(",") if n):
        factory, kind = MODELS[name]
        for variant in (v for v in args.variants.split(",") if v):
            seed_everything()
            t0 = time.perf_counter()
            tmp = out / f".{name}.{variant}.tmp.onnx"
            try:
                model = no_zero_weights(factory()).eval()
                inputs, names, axes = example(kind)
                opset = export_one(model, inputs, names, axes, tmp, variant)
                final = out / (f"{name}_op{opset}.onnx" if variant == "legacy17"
                               else f"{name}_dynamo_op{opset}.onnx")
                status = keep_or_replace(tmp, final, args.force)
                print(f"{name} {variant}: {status} {final.name} "
                      f"{final.stat().st_size / 2**20:.1f} MB "
                      f"{time.perf_counter() - t0:.1f}s", flush=True)
            except Exception as err:  # noqa: BLE001  (report and go on with the next)
                failed += 1
                report_failure(f"{name} {variant}", err, tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
