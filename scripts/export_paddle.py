"""Exports a few paddle.vision CNNs to ONNX with paddle2onnx, as acceptance material for
Paleozoic.

Runs with a Python that has paddlepaddle + paddle2onnx (not the project's own
environment), e.g.

    python -m venv /work/venv-paddle
    /work/venv-paddle/bin/pip install paddlepaddle paddle2onnx onnx packaging \
        onnxruntime onnx_graphsurgeon sympy
    /work/venv-paddle/bin/python scripts/export_paddle.py -o /work/exported/paddle

(paddle2onnx 2.1 imports `packaging` without declaring it, and its Polygraphy
constant-folding step pip-installs onnxruntime, onnx_graphsurgeon and sympy on first use
if they are missing: install them up front.)

No pretrained weights (pretrained=False). Weights are seeded; BatchNorm scale/shift are
drawn at random and the running statistics are set from one seeded random batch in train
mode (momentum 0), then eval. Each model is saved with paddle.jit.save (static input
[1, 3, H, W]) and converted with paddle2onnx.export at each requested opset into
OUT/NAME_opN.onnx.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys
import tempfile
import time
import warnings

import numpy as np

from exporter_cli import exporter_parser, output_folder, print_table

os.environ.setdefault("GLOG_minloglevel", "2")
warnings.filterwarnings("ignore")

import paddle
import paddle2onnx

SEED = 0

MODELS = {  # name -> (factory, input side)
    "resnet18": (lambda: paddle.vision.models.resnet18(pretrained=False), 224),
    "resnet50": (lambda: paddle.vision.models.resnet50(pretrained=False), 224),
    "mobilenet_v2": (lambda: paddle.vision.models.mobilenet_v2(pretrained=False), 224),
    "mobilenet_v3_small": (lambda: paddle.vision.models.mobilenet_v3_small(pretrained=False),
                           224),
    "vgg16": (lambda: paddle.vision.models.vgg16(pretrained=False), 224),
    "squeezenet1_1": (lambda: paddle.vision.models.squeezenet1_1(pretrained=False), 224),
    "shufflenet_v2_x1_0": (lambda: paddle.vision.models.shufflenet_v2_x1_0(pretrained=False),
                           224),
    "densenet121": (lambda: paddle.vision.models.densenet121(pretrained=False), 224),
    "alexnet": (lambda: paddle.vision.models.alexnet(pretrained=False), 224),
}
DEFAULT = "resnet18,mobilenet_v2,vgg16,mobilenet_v3_small,squeezenet1_1,shufflenet_v2_x1_0"


def seed_everything(seed: int = SEED) -> None:
    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)


def prepare(model: paddle.nn.Layer, side: int) -> paddle.nn.Layer:
    rng = np.random.default_rng(SEED + 1)
    bns = [m for m in model.sublayers()
           if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    for bn in bns:
        c = bn._mean.shape[0]
        if bn.weight is not None:
            bn.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            bn.bias.set_value(rng.normal(0.0, 0.1, c).astype("float32"))
        bn._momentum = 0.0                  # running stats := this batch's stats
    if bns:
        model.train()
        with paddle.no_grad():
            model(paddle.to_tensor(rng.standard_normal((4, 3, side, side)).astype("float32")))
    model.eval()
    for bn in bns:
        bn._momentum = 0.9
    return model


def main(argv: list[str] | None = None) -> int:
    parser = exporter_parser(__doc__, "/work/exported/paddle", MODELS, DEFAULT)
    parser.add_argument("--opsets", default="13,17", help="comma-separated opsets")
    args = parser.parse_args(argv)

    out = output_folder(args.out)
    paddle.set_device("cpu")
    print(f"paddle {paddle.__version__}, paddle2onnx {paddle2onnx.__version__}", flush=True)
    rows = []
    for name in [n for n in args.models.split(",") if n]:
        factory, side = MODELS[name]
        seed_everything()
        with tempfile.TemporaryDirectory(prefix=f"pd-{name}-") as tmp:
            t0 = time.perf_counter()
            try:
                model = prepare(factory(), side)
                x = paddle.to_tensor(np.random.default_rng(SEED).standard_normal(
                    (1, 3, side, side)).astype("float32"))
                with paddle.no_grad():
                    y = model(x).numpy()
                stats = f"|y| mean {np.abs(y).mean():.3g} std {y.std():.3g}"
                prefix = os.path.join(tmp, name)
                spec = [paddle.static.InputSpec([1, 3, side, side], "float32", "x")]
                paddle.jit.save(model, prefix, input_spec=spec)
                program = prefix + (".json" if os.path.exists(prefix + ".json")
                                    else ".pdmodel")
            except Exception as err:  # noqa: BLE001
                rows.append((name, "-", "FAILED (build/save)", f"{time.perf_counter() - t0:.1f}s",
                             f"{type(err).__name__}: {err}".splitlines()[0][:200]))
                print(" | ".join(rows[-1]), flush=True)
                continue
            for opset in [int(o) for o in args.opsets.split(",") if o]:
                t1 = time.perf_counter()
                target = out / f"{name}_op{opset}.onnx"
                log = io.StringIO()
                try:
                    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                        paddle2onnx.export(program, prefix + ".pdiparams", str(target),
                                           opset_version=opset, auto_upgrade_opset=False)
                    size = f"{target.stat().st_size / 2**20:.1f} MB"
                    rows.append((name, str(opset), "OK", f"{time.perf_counter() - t1:.1f}s",
                                 f"{target.name} {size}; {stats}"))
                except (Exception, SystemExit) as err:  # noqa: BLE001 (p2o may sys.exit)
                    target.unlink(missing_ok=True)
                    rows.append((name, str(opset), "FAILED", f"{time.perf_counter() - t1:.1f}s",
                                 f"{type(err).__name__}: {err}".splitlines()[0][:200]))
                print(" | ".join(rows[-1]), flush=True)

    print_table(("model", "opset", "status", "time", "file / note"), ("opset", "time"), rows,
                status_column=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
