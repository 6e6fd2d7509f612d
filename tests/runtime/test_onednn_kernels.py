"""No reference kernels without saying so: the project's models of each family users deploy
(MobileNetV2/V3, EfficientNet-B0 with SiLU and squeeze-and-excite, RegNetY, GoogLeNet,
ResNet, ShuffleNetV2, a detection head, a transformer encoder, a ViT block, a pooled text
classifier, BERT, LSTM/GRU/RNN stacks, a speech encoder with 1-D convolutions and group
normalisation, a 1-D transposed convolution and pooling) run on the oneDNN SDK under fuse-all
and per-layer with ONEDNN_VERBOSE, and no primitive may run one of oneDNN's reference
implementations (`ref:`), which are 10-100x slower than its JIT kernels (EfficientNet-B0's
SiLU as logistic + binary_mul post-op: 242 of 262 ms)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from paleozoic.runner.sdk import sdk_available

pytestmark = pytest.mark.skipif(not sdk_available("onednn"),
                                reason="the oneDNN SDK is not built")

MODELS = ("blocks:mobilenet_v2_block", "blocks:efficientnet_b0_block",
          "blocks:mobilenet_v3_block", "blocks:regnety_stages", "blocks:googlenet_block",
          "blocks:resnet18_block", "blocks:shufflenet_v2_block", "blocks:detection_head",
          "sequence:encoder_layer", "sequence:vit_block", "sequence:pooled_classifier",
          "bert:bert_model", "recurrent:recurrent_stack:LSTM", "recurrent:recurrent_stack:GRU",
          "recurrent:recurrent_stack:RNN", "speech:speech_encoder", "speech:deconv_pool_1d")

# oneDNN names its gemm-based RNN implementation "ref" (jit sgemm for the products, jit
# element-wise kernels between them): for f32 GRU it is the only one oneDNN 3.2 has (LSTM
# and vanilla RNN get brgemm), and the GRU export runs faster on it than on onnxruntime.
NOT_REFERENCE = {("rnn", "ref")}

_SCRIPT = textwrap.dedent("""
    import importlib, sys
    from paleozoic.optimize.plans import fuse_all, per_layer
    from paleozoic.pipeline import load_queue
    from paleozoic.runner.plan_runner import PlanRunner
    from paleozoic.accuracy.inputs import random_inputs

    for spec in sys.argv[1:]:
        module, name, *op = spec.split(":")
        kwargs = {"seq": 16} if name == "bert_model" else {}  # a static sequence length
        make = getattr(importlib.import_module("paleozoic_testing." + module), name)
        if op:  # a recurrent stack of this op, bidirectional: (model, feeds)
            model = make(op[0], direction="bidirectional", linear_before_reset=1)[0]
        else:
            model = make(**kwargs)
        queue = load_queue(model)
        feeds = random_inputs(model, 0)
        ordered = [feeds[n] for n in queue.onnx_input_names]
        for plan_name, plan in (("fuse-all", fuse_all(queue, mp=2)),
                                ("per-layer", per_layer(queue, mp=2))):
            runner = PlanRunner(queue, plan, sdk="onednn")
            print("RUN", spec, plan_name, flush=True)
            runner.run(ordered)
            runner.run(ordered)
            print("END", flush=True)
""")


def implementations(models: tuple[str, ...]) -> dict[str, Counter]:
    """Per (model, plan), how often each (primitive kind, implementation) ran."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", OMP_NUM_THREADS="2")
    # Not from the checkout: `python -c` puts the working directory first on sys.path.
    result = subprocess.run([sys.executable, "-c", _SCRIPT, *models], capture_output=True,
                            text=True, env=env, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    seen: dict[str, Counter] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("RUN "):
            current = line[4:]
            seen[current] = Counter()
        elif line.startswith("END"):
            current = None
        elif current and line.startswith("onednn_verbose,exec,cpu,"):
            fields = line.split(",")
            seen[current][(fields[3], fields[4])] += 1
    return seen


def test_no_reference_kernels():
    seen = implementations(MODELS)
    assert len(seen) == 2 * len(MODELS)
    refs = {run: [f"{n}x {kind} {impl}" for (kind, impl), n in counts.items()
                  if "ref" in impl and (kind, impl) not in NOT_REFERENCE]
            for run, counts in seen.items()}
    refs = {run: found for run, found in refs.items() if found}
    assert not refs, "reference kernels: " + "; ".join(
        f"{run}: {', '.join(found)}" for run, found in refs.items())
    # Each model ran oneDNN primitives at all (not only the mock's kernels).
    assert all(sum(counts.values()) > 0 for counts in seen.values())
