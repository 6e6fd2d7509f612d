"""Exports small members of model families that Paleozoic does not cover yet (decoder LLMs
with a KV cache, CLIP, Whisper, SwinV2, DETR, detection heads with and without NMS,
control flow) to ONNX, as acceptance material like scripts/export_sequence.py.

Runs with a Python that has torch, torchvision, transformers, onnx and onnxscript (not the
project's own environment); each exported file is then checked with onnx.checker and run in
onnxruntime on seeded random inputs, compared with PyTorch's outputs. onnxruntime may live
in another Python (--ort-python, default: this one if it has onnxruntime, else `python3`):

    /work/venv-torch/bin/python scripts/export_families.py -o /work/exported/families

Nothing is downloaded: the HuggingFace models are built from small configs with seeded
random weights, the torchvision one with weights=None. Every shape is static (batch 1, no
dynamic axes) except where a model says otherwise. All are exported with the legacy
TorchScript exporter (dynamo=False, opset 17, constant folding) to NAME_op17.onnx.

Models (inputs; outputs):
    gpt2_prefill     GPT2LMHeadModel (n_embd 128, 2 layers, 4 heads, vocab 512, 256
                     positions, sdpa attention); input_ids int64 [1,16], attention_mask int64
                     [1,16] (position_ids = arange(16) inside); logits [1,16,512],
                     present_key_i / present_value_i [1,4,16,32] for i = 0, 1
    gpt2_decode      the same model, one decode step after P=63 cached tokens; input_ids
                     [1,1], attention_mask int64 [1,64], position_ids int64 [1,1],
                     past_key_i / past_value_i [1,4,63,32]; logits [1,1,512], present_key_i /
                     present_value_i [1,4,64,32]
    llama_prefill    LlamaForCausalLM (hidden 128, intermediate 256, 2 layers, 4 heads, 2 KV
                     heads (grouped-query), vocab 512, default RoPE, sdpa attention); as
                     gpt2_prefill with KV tensors [1,2,16,32]
    llama_decode     as gpt2_decode with KV tensors [1,2,63,32] -> [1,2,64,32]
    gpt2_kv          the gpt2_decode step with symbolic lengths: input_ids and position_ids
                     [1,tokens], attention_mask [1,window], past_* [1,4,cached,32], logits
                     [1,tokens,512], present_* [1,4,window,32] (window = cached + tokens);
                     what `paleozoic compile --generate` compiles as prefill and decode step;
                     weights drawn with std 0.3 and an untied LM head, so greedy decoding
                     varies its tokens
    llama_kv         the same for llama_decode, with 4 key/value heads (the legacy exporter
                     bakes grouped-query attention's repeat to the traced length)
    clip_text        CLIPTextModel (hidden 128, 2 layers, 4 heads, vocab 1000, 77 positions,
                     eos_token_id 2: the legacy pooling, ArgMax of the token ids); input_ids
                     int64 [1,16]; pooler_output [1,128], last_hidden_state [1,16,128]
    clip_text_eos    the same with eos_token_id 999: pooling at the first EOS token
                     (Equal, Cast, ArgMax); same inputs and outputs
    clip_vision      CLIPVisionModel (hidden 128, 2 layers, 4 heads, 64x64 images, 16x16
                     patches); pixel_values [1,3,64,64]; pooler_output [1,128]
    whisper_encoder  WhisperModel's encoder (d_model 128, 2 layers, 4 heads, ffn 256, 80 mel
                     bins, 100 source positions); input_features [1,80,200];
                     last_hidden_state [1,100,128]
    swinv2           Swinv2Model (64x64 images, 4x4 patches, embed 32, depths [2,2], heads
                     [2,4], window 4: cosine attention with a clamped logit scale and the
                     continuous position bias MLP); pixel_values [1,3,64,64]; pooler_output
                     [1,64]
    detr             DetrForObjectDetection with a transformers ResNet backbone (basic
                     blocks, embedding 32, hidden sizes [32,64,128,256], depths [1,1,1,1],
                     random frozen batch-norm statistics), d_model 128, 2+2 layers, 4 heads,
                     ffn 256, 20 queries, 91 labels (+1 no-object); pixel_values
                     [1,3,128,128] (pixel_mask defaults to ones inside); logits [1,20,92],
                     pred_boxes [1,20,4]
    ssdlite_nms      torchvision ssdlite320_mobilenet_v3_large(weights=None,
                     weights_backbone=None, num_classes=5), eval mode, batch-norm statistics
                     measured on random images; image [1,3,320,320] in [0,1]; boxes [K,4],
                     scores [K], labels int64 [K] (K data-dependent: NonMaxSuppression;
                     compiled with --outputs at the heads' raw boxes [1,3234,4] and
                     scores [1,3234,5])
    deformable_detr  a Deformable-DETR-style detector: two conv levels (32x32, 16x16 of a
                     64x64 image), 20 learned queries, one decoder layer of multi-scale
                     deformable attention (4 heads x 2 levels x 4 points, sampling with
                     grid_sample as HuggingFace's pure-PyTorch path does), class and box
                     heads; image [1,3,64,64]; logits [1,20,10], pred_boxes [1,20,4]
    nmsfree_head     a conv backbone with per-anchor class and box heads (16x16 cells x 3
                     anchors x 8 classes), TopK (k=50) over the flattened sigmoid scores,
                     anchor = index // 8 and class = index % 8, GatherElements of the boxes;
                     image [1,3,128,128]; scores [1,50], boxes [1,50,4] (xyxy pixels),
                     classes int64 [1,50]
    silero_vad       the trained Silero VAD shipped in the silero-vad wheel
                     (silero_vad-6.2.3-py3-none-any.whl, silero_vad/data/silero_vad.onnx;
                     opset 16, made with spox), copied unchanged; found in an installed
                     silero_vad package or in the wheel given by --silero-wheel (get one
                     with `pip download --no-deps silero-vad==6.2.3`); input float [1,512],
                     state float [2,1,128], sr int64 0-d (16000 or 8000, chosen by a
                     top-level If); output [1,1], stateN [2,1,128]
    tiny_if_model    torch.jit.script of a module with a data-dependent branch (sum > 0 ->
                     conv_a, else conv_b): ONNX If; input [1,3,32,32]; output [1,8,32,32]
    tiny_loop_model  torch.jit.script of a module that applies x = tanh(Linear(x)) + x n
                     times, n a run-time int64 0-d input: ONNX Loop; inputs x [1,16], n int64
                     []; output [1,16] (checked with n = 3, 0, 7)
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import time
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from exporter_cli import exporter_parser, output_folder, report_failure
from torch_export import (default_ort_python, describe, no_zero_weights, randomise_norm_stats,
                          run_check, seed_everything, start_torch)

SEED = 0
OPSET = 17
PROMPT = 16         # prefill length of the decoder LLMs
PAST = 63           # cached tokens before the decode step
VOCAB = 512
SILERO_MEMBER = "silero_vad/data/silero_vad.onnx"

Tensors = dict[str, torch.Tensor]


@dataclass
class Spec:
    """What to export and how to check it.

    inputs: the export example, named, in the order of the module's forward arguments.
    checks: the feeds run in onnxruntime and compared with PyTorch (default: inputs).
    source: the bytes of a shipped ONNX file, written instead of an export (model None)."""

    model: nn.Module | None
    inputs: Tensors
    outputs: list[str]
    checks: list[Tensors] = field(default_factory=list)
    source: bytes | None = None
    dynamic_axes: dict[str, dict[int, str]] | None = None
    # `paleozoic compile` options the model needs (written to NAME.options beside it, read
    # by scripts/exporter_acceptance.py): symbolic axes, inputs control flow checks.
    options: str = ""


@dataclass
class Options:
    silero_wheel: Path | None = None


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


# --- decoder LLMs with a flat KV cache ----------------------------------------------------

class CausalLmStep(nn.Module):
    """A HuggingFace causal LM with flat tensors in and out: (input_ids, attention_mask,
    [position_ids, past_key_0, past_value_0, ...]) -> (logits, present_key_0,
    present_value_0, ...). Without past tensors it is a prefill with positions arange(T)."""

    def __init__(self, model: nn.Module, decode: bool) -> None:
        super().__init__()
        self.model = model
        self.decode = decode

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                *rest: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        config = self.model.config
        if self.decode:
            position_ids, past = rest[0], rest[1:]
            pairs = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
            cache = DynamicCache(pairs, config=config)
        else:
            position_ids = torch.arange(input_ids.shape[1]).unsqueeze(0)
            cache = DynamicCache(config=config)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, cache=cache, use_cache=True)
        flat = [out.logits]
        for layer in out.cache.layers:
            flat += [layer.keys, layer.values]
        return tuple(flat)


def _causal_lm(family: str, generating: bool = False) -> nn.Module:
    """`generating`: weights drawn wider than HuggingFace's 0.02 and an untied LM head, so
    that greedy decoding wanders over the vocabulary (a fresh model repeats one token, and a
    comparison of generated tokens would then show nothing); multi-head key/values for
    Llama, whose grouped-query repeat the legacy exporter bakes to the traced length."""
    import transformers

    wide = {"initializer_range": 0.3, "tie_word_embeddings": False} if generating else {}
    if family == "gpt2":
        config = transformers.GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=VOCAB,
                                         n_positions=256, bos_token_id=VOCAB - 1,
                                         eos_token_id=VOCAB - 1, **wide)
        return transformers.GPT2LMHeadModel(config)
    config = transformers.LlamaConfig(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4 if generating else 2, vocab_size=VOCAB,
        max_position_embeddings=256, **wide)
    return transformers.LlamaForCausalLM(config)


def _kv_names(prefix: str, layers: int) -> list[str]:
    return [f"{prefix}_{kind}_{i}" for i in range(layers) for kind in ("key", "value")]


def _llm(family: str, decode: bool, generating: bool = False) -> Callable[[Options], Spec]:
    def build(_: Options) -> Spec:
        model = _causal_lm(family, generating)
        config = model.config
        layers, heads = config.num_hidden_layers, config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = config.hidden_size // heads
        gen = _gen()
        outputs = ["logits", *_kv_names("present", layers)]
        if not decode:
            ids = torch.randint(0, VOCAB, (1, PROMPT), generator=gen)
            inputs = {"input_ids": ids, "attention_mask": torch.ones(1, PROMPT, dtype=torch.int64)}
            padded = {"input_ids": torch.randint(0, VOCAB, (1, PROMPT), generator=gen),
                      "attention_mask": torch.ones(1, PROMPT, dtype=torch.int64)}
            padded["attention_mask"][:, :3] = 0   # left padding: the mask must not be baked in
            return Spec(CausalLmStep(model, decode=False), inputs, outputs, [inputs, padded])

        def feed(masked: int) -> Tensors:
            mask = torch.ones(1, PAST + 1, dtype=torch.int64)
            mask[:, :masked] = 0
            past = {name: torch.randn(1, kv_heads, PAST, head_dim, generator=gen)
                    for name in _kv_names("past", layers)}
            return {"input_ids": torch.randint(0, VOCAB, (1, 1), generator=gen),
                    "attention_mask": mask,
                    "position_ids": torch.tensor([[PAST - masked]]), **past}

        inputs = feed(0)
        return Spec(CausalLmStep(model, decode=True), inputs, outputs, [inputs, feed(5)])
    return build


def _llm_kv(family: str) -> Callable[[Options], Spec]:
    """The decode step with symbolic lengths (tokens this step, cached tokens before it): the
    one model a generation loop compiles twice, a prefill of the prompt over an empty
    (masked) cache window and a one-token decode step over the rest of it."""
    def build(options: Options) -> Spec:
        spec = _llm(family, decode=True, generating=True)(options)
        model = spec.model.model  # type: ignore[union-attr]
        config = model.config
        layers, heads = config.num_hidden_layers, config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = config.hidden_size // heads
        gen = _gen()

        def prefill(tokens: int, window: int) -> Tensors:
            # The prompt at the end of a window of `window` slots, the empty slots masked.
            mask = torch.zeros(1, window, dtype=torch.int64)
            mask[:, window - tokens:] = 1
            past = {name: torch.zeros(1, kv_heads, window - tokens, head_dim)
                    for name in _kv_names("past", layers)}
            return {"input_ids": torch.randint(0, VOCAB, (1, tokens), generator=gen),
                    "attention_mask": mask,
                    "position_ids": torch.arange(tokens).unsqueeze(0), **past}

        axes = {"input_ids": {1: "tokens"}, "attention_mask": {1: "window"},
                "position_ids": {1: "tokens"}, "logits": {1: "tokens"}}
        axes |= {name: {2: "cached"} for name in _kv_names("past", layers)}
        axes |= {name: {2: "window"} for name in _kv_names("present", layers)}
        shapes = [f"input_ids=1x{PROMPT}", f"attention_mask=1x{PAST + 1}",
                  f"position_ids=1x{PROMPT}"] + [
            f"{name}=1x{kv_heads}x{PAST + 1 - PROMPT}x{head_dim}"
            for name in _kv_names("past", layers)]
        return Spec(spec.model, spec.inputs, spec.outputs,
                    [spec.inputs, prefill(PROMPT, PAST + 1), prefill(5, 32)],
                    dynamic_axes=axes,
                    options=" ".join(f"--input-shape {s}" for s in shapes))
    return build


# --- CLIP, Whisper, SwinV2, DETR -----------------------------------------------------------

class HfOutputs(nn.Module):
    """A HuggingFace model called with its inputs as keywords, returning chosen fields."""

    def __init__(self, model: nn.Module, arg_names: list[str], fields: list[str]) -> None:
        super().__init__()
        self.model = model
        self.arg_names = arg_names
        self.fields = fields

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(**dict(zip(self.arg_names, args)))
        return tuple(out[name] for name in self.fields)


def _hf(build_model: Callable[[], nn.Module], inputs: Callable[[torch.Generator], Tensors],
        fields: list[str]) -> Callable[[Options], Spec]:
    def build(_: Options) -> Spec:
        gen = _gen()
        example = inputs(gen)
        model = HfOutputs(build_model(), list(example), fields)
        return Spec(model, example, fields, [example, inputs(gen)])
    return build


def _clip_text(eos_token_id: int) -> nn.Module:
    import transformers

    config = transformers.CLIPTextConfig(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        vocab_size=1000, max_position_embeddings=77, bos_token_id=0, pad_token_id=1,
        eos_token_id=eos_token_id)
    return transformers.CLIPTextModel(config)


def _clip_tokens(gen: torch.Generator) -> Tensors:
    """Random tokens with one 999 at a random place: the end-of-text token of both CLIP
    text models (the highest id for the legacy pooling, the EOS id for the other)."""
    ids = torch.randint(3, 998, (1, PROMPT), generator=gen)
    ids[0, int(torch.randint(4, PROMPT, (1,), generator=gen))] = 999
    return {"input_ids": ids}


def _clip_vision() -> nn.Module:
    import transformers

    config = transformers.CLIPVisionConfig(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        image_size=64, patch_size=16)
    return transformers.CLIPVisionModel(config)


def _whisper_encoder() -> nn.Module:
    import transformers

    config = transformers.WhisperConfig(
        d_model=128, encoder_layers=2, encoder_attention_heads=4, decoder_layers=2,
        decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, num_mel_bins=80,
        max_source_positions=100)
    return transformers.WhisperModel(config).get_encoder()


def _swinv2() -> nn.Module:
    import transformers

    config = transformers.Swinv2Config(image_size=64, patch_size=4, embed_dim=32,
                                       depths=[2, 2], num_heads=[2, 4], window_size=4)
    return transformers.Swinv2Model(config)


def _detr() -> nn.Module:
    import transformers

    backbone = transformers.ResNetConfig(
        embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1],
        layer_type="basic", out_features=["stage4"])
    config = transformers.DetrConfig(
        use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=backbone,
        d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, num_queries=20,
        num_labels=91)
    return randomise_norm_stats(transformers.DetrForObjectDetection(config))


def _image(size: int, name: str = "pixel_values") -> Callable[[torch.Generator], Tensors]:
    return lambda gen: {name: torch.randn(1, 3, size, size, generator=gen)}


# --- detection heads -----------------------------------------------------------------------

class TorchvisionDetector(nn.Module):
    """A torchvision detection model on one image tensor, returning boxes, scores, labels."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        det = self.model(list(image))[0]
        return det["boxes"], det["scores"], det["labels"]


def _ssdlite(_: Options) -> Spec:
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large

    model = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5)
    gen = _gen()
    _calibrate_batchnorm(model, gen)
    images = [{"image": torch.rand(1, 3, 320, 320, generator=gen)} for _ in range(2)]
    # NonMaxSuppression's output size depends on the data: the session computes the
    # network up to the heads' raw boxes and scores, as deployments do.
    heads = ",".join(f"/model/head/{h}_head/Concat_12_output_0"
                     for h in ("regression", "classification"))
    return Spec(TorchvisionDetector(model), images[0], ["boxes", "scores", "labels"], images,
                options=f"--outputs {heads}")


@torch.no_grad()
def _calibrate_batchnorm(model: nn.Module, gen: torch.Generator, batches: int = 3) -> None:
    """Batch-norm statistics of an SSD's backbone and head measured on random images:
    with fresh (or made-up) statistics the untrained network's scores hardly depend on the
    input, and the many tied scores make NMS pick boxes arbitrarily."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None          # a plain average over the batches
    model.backbone.train()
    model.head.train()
    for _ in range(batches):
        images = model.transform.normalize(torch.rand(2, 3, 320, 320, generator=gen))
        model.head(list(model.backbone(images).values()))
    model.eval()


class NmsFreeHead(nn.Module):
    """Dense per-anchor scores and boxes, then TopK over all (anchor, class) pairs: the
    NMS-free decoding of one-to-one detectors (DETR-like, YOLOv10)."""

    def __init__(self, classes: int = 8, anchors: int = 3, k: int = 50) -> None:
        super().__init__()
        self.classes, self.anchors, self.k = classes, anchors, k

        def conv(cin: int, cout: int) -> nn.Module:
            return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1), nn.ReLU())

        self.body = nn.Sequential(conv(3, 16), conv(16, 32), conv(32, 64))   # stride 8
        self.cls = nn.Conv2d(64, anchors * classes, 1)
        self.box = nn.Conv2d(64, anchors * 4, 1)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        feat = self.body(image)
        n, _, h, w = feat.shape
        scores = self.cls(feat).sigmoid().permute(0, 2, 3, 1).reshape(n, -1)  # [N, HWA*C]
        raw = self.box(feat).sigmoid().permute(0, 2, 3, 1).reshape(n, h * w * self.anchors, 4)
        size = torch.tensor([image.shape[3], image.shape[2]], dtype=raw.dtype)
        centre, extent = raw[..., :2] * size, raw[..., 2:] * size
        boxes = torch.cat([centre - extent / 2, centre + extent / 2], dim=-1)  # xyxy pixels
        top, index = scores.topk(self.k, dim=1)
        anchor = torch.div(index, self.classes, rounding_mode="floor")
        classes = index % self.classes
        kept = torch.gather(boxes, 1, anchor.unsqueeze(-1).expand(-1, -1, 4))
        return top, kept, classes


def _nmsfree(_: Options) -> Spec:
    image = {"image": torch.rand(1, 3, 128, 128, generator=_gen())}
    return Spec(NmsFreeHead(), image, ["scores", "boxes", "classes"])


class DeformableDetrHead(nn.Module):
    """A Deformable-DETR-style detector: a two-level conv backbone, learned queries, one
    decoder layer of multi-scale deformable attention (each query predicts sampling offsets
    and weights per head, level and point; values sampled with grid_sample, bilinear, zeros
    padding, align_corners=False, as HuggingFace's pure-PyTorch
    multi_scale_deformable_attention does), then class and box heads."""

    def __init__(self, d: int = 32, heads: int = 4, levels: int = 2, points: int = 4,
                 queries: int = 20, classes: int = 10) -> None:
        super().__init__()
        self.d, self.heads, self.levels, self.points = d, heads, levels, points
        self.stem = nn.Sequential(nn.Conv2d(3, d, 3, stride=2, padding=1), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(d, d, 3, stride=2, padding=1), nn.ReLU())
        self.queries = nn.Parameter(torch.randn(queries, d, generator=_gen()))
        self.reference = nn.Linear(d, 2)
        self.offsets = nn.Linear(d, heads * levels * points * 2)
        self.weights = nn.Linear(d, heads * levels * points)
        self.value = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.classes = nn.Linear(d, classes)
        self.boxes = nn.Linear(d, 4)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        import torch.nn.functional as F

        n, q, h, hd = image.shape[0], self.queries.shape[0], self.heads, self.d // self.heads
        maps = [self.stem(image)]
        maps.append(self.down(maps[0]))
        query = self.queries.unsqueeze(0).expand(n, -1, -1)
        reference = torch.sigmoid(self.reference(query))                    # [n, q, 2]
        offsets = self.offsets(query).view(n, q, h, self.levels, self.points, 2)
        weights = self.weights(query).view(n, q, h, self.levels * self.points).softmax(-1)
        weights = weights.view(n, q, h, self.levels, self.points)
        sampled = []
        for level, feature in enumerate(maps):
            fh, fw = feature.shape[2], feature.shape[3]
            value = self.value(feature.flatten(2).transpose(1, 2))          # [n, fh*fw, d]
            value = value.transpose(1, 2).reshape(n * h, hd, fh, fw)
            scale = torch.tensor([fw, fh], dtype=image.dtype)
            where = reference[:, :, None, None, :] + offsets[:, :, :, level] / scale
            grid = (2 * where - 1).permute(0, 2, 1, 3, 4).reshape(n * h, q, self.points, 2)
            sampled.append(F.grid_sample(value, grid, mode="bilinear", padding_mode="zeros",
                                         align_corners=False))             # [n*h, hd, q, p]
        stacked = torch.stack(sampled, dim=-2)                              # [n*h, hd, q, L, p]
        w = weights.permute(0, 2, 1, 3, 4).reshape(n * h, 1, q, self.levels, self.points)
        attended = (stacked * w).sum(-1).sum(-1).view(n, self.d, q).transpose(1, 2)
        hidden = self.norm(query + self.out(attended))
        return self.classes(hidden), torch.sigmoid(self.boxes(hidden))


def _deformable_detr(_: Options) -> Spec:
    images = [{"image": torch.randn(1, 3, 64, 64, generator=_gen())}]
    return Spec(DeformableDetrHead(), images[0], ["logits", "pred_boxes"], images)


# --- control flow --------------------------------------------------------------------------

class TinyIf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv_a = nn.Conv2d(3, 8, 3, padding=1)
        self.conv_b = nn.Conv2d(3, 8, 5, padding=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool(x.sum() > 0):
            y = torch.relu(self.conv_a(x))
        else:
            y = torch.sigmoid(self.conv_b(x))
        return y


class TinyLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        for _ in range(int(n)):
            x = torch.tanh(self.fc(x)) + x
        return x


def _tiny_if(_: Options) -> Spec:
    x = torch.randn(1, 3, 32, 32, generator=_gen())
    x = x - x.mean() + 0.1       # positive sum: then branch; -x takes the else branch
    return Spec(_script(TinyIf()), {"x": x}, ["y"], [{"x": x}, {"x": -x}])


def _tiny_loop(_: Options) -> Spec:
    x = torch.randn(1, 16, generator=_gen())
    checks = [{"x": x, "n": torch.tensor(n, dtype=torch.int64)} for n in (3, 0, 7)]
    return Spec(_script(TinyLoop()), checks[0], ["y"], checks, options="--input-value n=3")


def _script(module: nn.Module) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # torch.jit.script is deprecated
        return torch.jit.script(module)


# --- shipped ONNX --------------------------------------------------------------------------

def _silero(options: Options) -> Spec:
    package = importlib.util.find_spec("silero_vad")
    if package is not None and package.origin is not None:
        source = (Path(package.origin).parent.parent / SILERO_MEMBER).read_bytes()
    elif options.silero_wheel is not None:
        with zipfile.ZipFile(options.silero_wheel) as wheel:
            source = wheel.read(SILERO_MEMBER)
    else:
        raise FileNotFoundError("no silero_vad package here; pass --silero-wheel "
                                "silero_vad-6.2.3-py3-none-any.whl")
    gen = _gen()
    feeds = [{"input": torch.randn(1, 512, generator=gen) * 0.1,
              "state": torch.zeros(2, 1, 128), "sr": torch.tensor(16000)},
             {"input": torch.randn(1, 256, generator=gen) * 0.1,
              "state": torch.zeros(2, 1, 128), "sr": torch.tensor(8000)}]
    return Spec(None, feeds[0], ["output", "stateN"], feeds, source=source,
                options="--input-value sr=16000 --input-shape input=1x512 "
                        "--input-shape state=2x1x128")


MODELS: dict[str, Callable[[Options], Spec]] = {
    "gpt2_prefill": _llm("gpt2", decode=False),
    "gpt2_decode": _llm("gpt2", decode=True),
    "llama_prefill": _llm("llama", decode=False),
    "llama_decode": _llm("llama", decode=True),
    "gpt2_kv": _llm_kv("gpt2"),
    "llama_kv": _llm_kv("llama"),
    "clip_text": _hf(lambda: _clip_text(2), _clip_tokens,
                     ["pooler_output", "last_hidden_state"]),
    "clip_text_eos": _hf(lambda: _clip_text(999), _clip_tokens,
                         ["pooler_output", "last_hidden_state"]),
    "clip_vision": _hf(_clip_vision, _image(64), ["pooler_output"]),
    "whisper_encoder": _hf(_whisper_encoder,
                           lambda gen: {"input_features": torch.randn(1, 80, 200, generator=gen)},
                           ["last_hidden_state"]),
    "swinv2": _hf(_swinv2, _image(64), ["pooler_output"]),
    "detr": _hf(_detr, _image(128), ["logits", "pred_boxes"]),
    "ssdlite_nms": _ssdlite,
    "deformable_detr": _deformable_detr,
    "nmsfree_head": _nmsfree,
    "silero_vad": _silero,
    "tiny_if_model": _tiny_if,
    "tiny_loop_model": _tiny_loop,
}


# --- export and check ----------------------------------------------------------------------

def export(spec: Spec, path: Path) -> None:
    assert spec.model is not None
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(spec.model, tuple(spec.inputs.values()), str(path),
                          input_names=list(spec.inputs), output_names=spec.outputs,
                          dynamo=False, opset_version=OPSET, do_constant_folding=True,
                          dynamic_axes=spec.dynamic_axes)


@torch.no_grad()
def save_checks(spec: Spec, path: Path) -> None:
    """The check feeds and, for an exported model, PyTorch's outputs on them, as .npz."""
    arrays: dict[str, np.ndarray] = {}
    for k, feed in enumerate(spec.checks or [spec.inputs]):
        for name, tensor in feed.items():
            arrays[f"feed{k}:{name}"] = tensor.numpy()
        if spec.model is not None:
            outs = spec.model(*feed.values())
            outs = outs if isinstance(outs, tuple) else (outs,)
            for name, tensor in zip(spec.outputs, outs):
                arrays[f"ref{k}:{name}"] = tensor.numpy()
    np.savez(path, **arrays)


def main(argv: list[str] | None = None) -> int:
    parser = exporter_parser(__doc__, "/work/exported/families", MODELS, models_flag="--only")
    parser.add_argument("--ort-python", default=default_ort_python(),
                        help="a Python with onnx and onnxruntime for the checks")
    parser.add_argument("--silero-wheel", type=Path,
                        help="silero-vad wheel to copy silero_vad.onnx from, when the "
                             "silero_vad package is not installed")
    parser.add_argument("--force", action="store_true", help="re-export existing files")
    args = parser.parse_args(argv)

    start_torch()
    out = output_folder(args.out)
    options = Options(silero_wheel=args.silero_wheel)
    failed = 0
    for name in (n for n in args.only.split(",") if n):
        if name not in MODELS:
            parser.error(f"unknown model {name!r}")
        seed_everything()
        t0 = time.perf_counter()
        tmp = out / f".{name}.tmp.onnx"
        checks = out / f".{name}.checks.npz"
        try:
            spec = MODELS[name](options)
            if spec.model is not None:
                spec.model = no_zero_weights(spec.model).eval()
                final = out / f"{name}_op{OPSET}.onnx"
            else:
                final = out / f"{name}.onnx"
            status = "OK (kept existing)" if final.exists() and not args.force else "OK"
            if status == "OK":
                if spec.source is not None:
                    tmp.write_bytes(spec.source)
                else:
                    export(spec, tmp)
                tmp.replace(final)
            if spec.options:
                final.with_suffix(".options").write_text(spec.options + "\n")
            save_checks(spec, checks)
            report = run_check(args.ort_python, final, checks)
            print(f"{name}: {status} {final.name} {final.stat().st_size / 2**20:.1f} MB "
                  f"{time.perf_counter() - t0:.1f}s {describe(report)}", flush=True)
        except Exception as err:  # noqa: BLE001  (report and go on with the next)
            failed += 1
            report_failure(name, err, tmp, width=300, frames=3)
        finally:
            checks.unlink(missing_ok=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
