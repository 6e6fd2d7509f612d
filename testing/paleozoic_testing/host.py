"""Test models with integer inputs and outputs, built with onnx.helper: what host layers
(paleozoic.ops.host) compute.

    uint8_classifier: uint8 image -> Cast -> Div 255 -> Conv -> Relu -> GlobalAveragePool
                      -> Flatten -> Gemm -> logits, and ArgMax(logits) as an int64 output
    topk_classifier:  float image -> the same CNN -> logits; TopK(logits, k) as the indices
                      (int64) and Softmax of the top values

    from paleozoic_testing.host import uint8_classifier
    model = uint8_classifier(seed=0)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic_testing.workloads import _Graph


def uint8_classifier(seed: int = 0, batch: int = 2, size: int = 8,
                     classes: int = 10) -> onnx.ModelProto:
    """A classifier of a uint8 NCHW image "image" with two outputs: the float logits and
    the int64 class index (ArgMax over the classes, keepdims=0)."""
    g = _Graph("uint8_classifier", seed, batch)
    pixels = g.op("Cast", ["image"], to=TensorProto.FLOAT)
    scaled = g.op("Div", [pixels, g._init("scale", np.array(255.0))])
    h = g.op("Relu", [g.conv(scaled, 3, 8, 3)])
    pooled = g.op("Flatten", [g.op("GlobalAveragePool", [h])])
    weight = g._init("fc.weight", g.rng.normal(0.0, 1.0, size=(classes, 8)))
    bias = g._init("fc.bias", g.rng.normal(0.0, 0.1, size=classes))
    logits = g.op("Gemm", [pooled, weight, bias], transB=1)
    label = g.op("ArgMax", [logits], axis=1, keepdims=0)
    graph = helper.make_graph(
        g.nodes, g.name,
        [helper.make_tensor_value_info("image", TensorProto.UINT8, [batch, 3, size, size])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [batch, classes]),
         helper.make_tensor_value_info(label, TensorProto.INT64, [batch])], g.inits)
    return _checked(graph)


def topk_classifier(seed: int = 0, batch: int = 2, size: int = 8, classes: int = 10,
                    k: int = 3) -> onnx.ModelProto:
    """A classifier of a float NCHW image "image" with two outputs: the int64 indices of
    its k best classes (ONNX TopK) and the softmax over their logits (a device layer
    reading the host layer's float values)."""
    g = _Graph("topk_classifier", seed, batch)
    h = g.op("Relu", [g.conv("image", 3, 8, 3)])
    pooled = g.op("Flatten", [g.op("GlobalAveragePool", [h])])
    weight = g._init("fc.weight", g.rng.normal(0.0, 1.0, size=(classes, 8)))
    logits = g.op("Gemm", [pooled, weight], transB=1)
    kk = "k"
    g.inits.append(numpy_helper.from_array(np.array([k], dtype=np.int64), kk))
    values, indices = f"{g.name}_values", f"{g.name}_indices"
    g.nodes.append(helper.make_node("TopK", [logits, kk], [values, indices], name="topk",
                                    axis=-1))
    probs = g.op("Softmax", [values], axis=1)
    graph = helper.make_graph(
        g.nodes, g.name,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, 3, size, size])],
        [helper.make_tensor_value_info(indices, TensorProto.INT64, [batch, k]),
         helper.make_tensor_value_info(probs, TensorProto.FLOAT, [batch, k])], g.inits)
    return _checked(graph)


def hf_masked_softmax(seq: int = 6, heads: int = 2, exporter: str = "legacy") -> onnx.ModelProto:
    """Attention-mask forms of HuggingFace transformers 5's BertModel export, on a scores
    input: Cast(mask, bool), Flatten, Gather by arange, Reshape (`exporter="dynamo"`: the
    dynamo exporter's GatherND by the constant coordinates (0, j) instead), And with an
    all-true constant, Expand, Where(mask, 0, -inf) added to the scores, Softmax, and the
    NaN guard Where(IsNaN(p), 0, p). Inputs: mask int64 [1, seq], scores float
    [1, heads, seq, seq]."""
    s = seq
    coordinates = np.stack([np.zeros(s, np.int64), np.arange(s)], axis=-1)
    inits = [
        helper.make_tensor("idx", TensorProto.INT64, [1, 1, 1, s], list(range(s))),
        helper.make_tensor("coords", TensorProto.INT64, [1, 1, 1, s, 2],
                           coordinates.reshape(-1).tolist()),
        helper.make_tensor("shape4", TensorProto.INT64, [4], [1, 1, 1, s]),
        helper.make_tensor("true", TensorProto.BOOL, [1, 1, s, s], [True] * s * s),
        helper.make_tensor("expand", TensorProto.INT64, [4], [1, 1, s, s]),
        helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
        helper.make_tensor("ninf", TensorProto.FLOAT, [], [-np.inf]),
    ]
    nodes = [
        helper.make_node("Cast", ["mask"], ["mb"], to=TensorProto.BOOL),
        *([helper.make_node("GatherND", ["mb", "coords"], ["m4"], name="gather_nd")]
          if exporter == "dynamo" else
          [helper.make_node("Flatten", ["mb"], ["mf"], axis=2),
           helper.make_node("Gather", ["mf", "idx"], ["mg"], axis=0),
           helper.make_node("Reshape", ["mg", "shape4"], ["m4"])]),
        helper.make_node("And", ["true", "m4"], ["ma"]),
        helper.make_node("Expand", ["ma", "expand"], ["me"]),
        helper.make_node("Where", ["me", "zero", "ninf"], ["additive"], name="where_mask"),
        helper.make_node("Add", ["scores", "additive"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "p"], ["y"], name="where_nan"),
    ]
    graph = helper.make_graph(nodes, "hf_masked_softmax", [
        helper.make_tensor_value_info("mask", TensorProto.INT64, [1, s]),
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, heads, s, s])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, heads, s, s])], inits)
    return _checked(graph)


def compare_select(batch: int = 2) -> onnx.ModelProto:
    """Run-time comparisons, logic and selection (the SDK's comparison and logic ops and
    the host's Where), on float inputs x [batch, 3, 4, 5], z of x's shape and y [4, 5]:

        c1 = x > y   c2 = y < x (swapped to x > y)   c3 = Not(x == z)   c4 = x >= z
        c5 = And(c1, c3)   c6 = Or(c5, y <= x)   c7 = Xor(c6, c4)
        selected = Where(c7, x, z)      (run-time values: the host's HostWhere)
        filled   = Where(c5, -inf, x)   (masked_fill)
        flags    = Cast(c6, float) + Cast(c2, float)
        clipped  = Clip(z, 1e-12, inf)  (bounds no activation has: the SDK's Clip)

    Inputs with inf, nan and -0.0 check that neither side's specials leak into the other."""
    shape = [batch, 3, 4, 5]
    nodes = [
        helper.make_node("Greater", ["x", "y"], ["c1"]),
        helper.make_node("Less", ["y", "x"], ["c2"]),
        helper.make_node("Equal", ["x", "z"], ["eq"]),
        helper.make_node("Not", ["eq"], ["c3"]),
        helper.make_node("GreaterOrEqual", ["x", "z"], ["c4"]),
        helper.make_node("And", ["c1", "c3"], ["c5"]),
        helper.make_node("LessOrEqual", ["y", "x"], ["le"]),
        helper.make_node("Or", ["c5", "le"], ["c6"]),
        helper.make_node("Xor", ["c6", "c4"], ["c7"]),
        helper.make_node("Where", ["c7", "x", "z"], ["selected"], name="select"),
        helper.make_node("Where", ["c5", "ninf", "x"], ["filled"], name="masked_fill"),
        helper.make_node("Cast", ["c6"], ["f6"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["c2"], ["f2"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["f6", "f2"], ["flags"]),
        helper.make_node("Clip", ["z", "eps", "inf"], ["clipped"]),
    ]
    inits = [helper.make_tensor("ninf", TensorProto.FLOAT, [], [-np.inf]),
             helper.make_tensor("inf", TensorProto.FLOAT, [], [np.inf]),
             helper.make_tensor("eps", TensorProto.FLOAT, [], [1e-12])]
    graph = helper.make_graph(nodes, "compare_select", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("z", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
         for n in ("selected", "filled", "flags", "clipped")], inits)
    return _checked(graph)


def compare_select_inputs(batch: int = 2, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of compare_select: normal values, a third of z equal to x, and inf, -inf, nan
    and -0.0 in x, z and y."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 3, 4, 5)).astype(np.float32)
    z = np.where(rng.random(x.shape) < 0.33, x,
                 rng.standard_normal(x.shape)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    flat_x, flat_z = x.reshape(-1), z.reshape(-1)
    flat_x[:6] = [np.inf, -np.inf, np.nan, -0.0, 0.0, np.nan]
    flat_z[:6] = [np.inf, 1.0, np.nan, 0.0, -0.0, 2.0]
    y[0, :4] = [np.nan, -np.inf, 0.0, np.inf]
    return {"x": x, "z": z, "y": y}


def topk_gather_head(batch: int = 1, anchors: int = 8, k: int = 3) -> onnx.ModelProto:
    """An NMS-free detection head's selection: the k best anchors by score (TopK over the
    anchor axis, per class column) and their boxes gathered by those indices
    (GatherElements, run-time data and run-time indices, both on the host), then a device
    layer (Relu) on the gathered boxes. Inputs: scores and boxes [batch, anchors, 4]."""
    shape = [batch, anchors, 4]
    nodes = [
        helper.make_node("TopK", ["scores", "k"], ["top", "index"], axis=1, name="topk"),
        helper.make_node("GatherElements", ["boxes", "index"], ["picked"], axis=1,
                         name="gather"),
        helper.make_node("Relu", ["picked"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "topk_gather_head",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("scores",
                                                                             "boxes")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, k, 4])],
        [numpy_helper.from_array(np.array([k], dtype=np.int64), "k")])
    return _checked(graph)


def _first_eos_position() -> list[onnx.NodeProto]:
    """Each row's first end-of-text position "pos" in the int64 ids "ids" [batch, seq], the
    token id "eos": Equal ("is_eos"), Cast to int32, ArgMax over the sequence."""
    return [
        helper.make_node("Equal", ["ids", "eos"], ["is_eos"], name="is_eos"),
        helper.make_node("Cast", ["is_eos"], ["eos32"], to=TensorProto.INT32, name="eos32"),
        helper.make_node("ArgMax", ["eos32"], ["pos"], axis=1, keepdims=0, name="pos"),
    ]


def integer_ops(batch: int = 2, seq: int = 9, eos: int = 5) -> onnx.ModelProto:
    """Integer arithmetic, comparisons and logic on run-time tensors (HostArith): a
    CLIP-style end-of-text position (Equal of the token ids with an id, Cast, ArgMax), a
    flat index split into a row and a class (Div and Mod of int64 ids, negative ones
    included), a flag mixing And, Greater and Not, and on floats a comparison with a number
    whose mask scales the input and Mod with fmod=1. Inputs ids int64 [batch, seq], x float
    [batch, seq]."""
    shape = [batch, seq]
    nodes = [
        *_first_eos_position(),
        helper.make_node("Div", ["ids", "seven"], ["row"], name="row"),
        helper.make_node("Mod", ["ids", "seven"], ["cls"], name="cls"),
        helper.make_node("Mod", ["ids", "minus_seven"], ["cls_neg"], name="cls_neg"),
        helper.make_node("Greater", ["ids", "three"], ["big"], name="big"),
        helper.make_node("Not", ["is_eos"], ["not_eos"], name="not_eos"),
        helper.make_node("And", ["big", "not_eos"], ["both"], name="both"),
        helper.make_node("Cast", ["both"], ["flag"], to=TensorProto.INT64, name="flag"),
        helper.make_node("Less", ["x", "half"], ["low"], name="low"),
        helper.make_node("Cast", ["low"], ["low_f"], to=TensorProto.FLOAT, name="low_f"),
        helper.make_node("Mul", ["x", "low_f"], ["kept"], name="kept"),
        helper.make_node("Mod", ["x", "three_q"], ["wrapped"], fmod=1, name="wrapped"),
    ]
    ints = [("eos", eos), ("seven", 7), ("minus_seven", -7), ("three", 3)]
    inits = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in ints]
    inits += [numpy_helper.from_array(np.array(v, dtype=np.float32), n)
              for n, v in (("half", 0.5), ("three_q", 0.75))]
    outputs = [("pos", TensorProto.INT64, [batch]), ("row", TensorProto.INT64, shape),
               ("cls", TensorProto.INT64, shape), ("cls_neg", TensorProto.INT64, shape),
               ("flag", TensorProto.INT64, shape), ("kept", TensorProto.FLOAT, shape),
               ("wrapped", TensorProto.FLOAT, shape)]
    graph = helper.make_graph(
        nodes, "integer_ops",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, shape),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], inits)
    return _checked(graph)


def integer_ops_inputs(batch: int = 2, seq: int = 9, eos: int = 5,
                       seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of integer_ops: ids from -20 to 20 with one end-of-text id a row (at a
    different place in each), x standard normal times 3 with -0.0 and values on 0.5."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(-20, 21, size=(batch, seq)).astype(np.int64)
    ids[ids == eos] = eos + 1
    for b in range(batch):
        ids[b, (2 + 3 * b) % seq] = eos
    x = (3 * rng.standard_normal((batch, seq))).astype(np.float32)
    x.reshape(-1)[:3] = [-0.0, 0.5, -1.5]
    return {"ids": ids, "x": x}


def token_pool_causal_mask(batch: int = 2, seq: int = 6, width: int = 4,
                           eos: int = 7) -> onnx.ModelProto:
    """Two host paths of decoder and CLIP-style text models: the hidden state at each row's
    first end-of-text token (Equal with the id, ArgMax, a flat row index by integer Mul and
    Add, Gather of run-time rows by run-time indices: HostGather), and an attention bias from
    a run-time padding mask And-ed with a constant causal mask (HostArith with a constant
    operand), Where(mask, 0, -inf). Inputs ids and attention_mask int64 [batch, seq], hidden
    float [batch, seq, width]."""
    causal = np.tril(np.ones((seq, seq), dtype=bool)).reshape(1, 1, seq, seq)
    nodes = [
        *_first_eos_position(),
        helper.make_node("Add", ["pos", "row_starts"], ["flat"], name="flat"),
        helper.make_node("Reshape", ["hidden", "rows_shape"], ["rows"], name="rows"),
        helper.make_node("Gather", ["rows", "flat"], ["pooled"], axis=0, name="pooled"),
        helper.make_node("Cast", ["attention_mask"], ["keep"], to=TensorProto.BOOL,
                         name="keep"),
        helper.make_node("Unsqueeze", ["keep", "axes"], ["keep4"], name="keep4"),
        helper.make_node("And", ["causal", "keep4"], ["visible"], name="visible"),
        helper.make_node("Where", ["visible", "zero", "ninf"], ["bias"], name="bias"),
    ]
    inits = [numpy_helper.from_array(np.array(eos, dtype=np.int64), "eos"),
             numpy_helper.from_array(np.arange(batch, dtype=np.int64) * seq, "row_starts"),
             numpy_helper.from_array(np.array([batch * seq, width], dtype=np.int64),
                                     "rows_shape"),
             numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "axes"),
             numpy_helper.from_array(causal, "causal"),
             helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("ninf", TensorProto.FLOAT, [], [-np.inf])]
    graph = helper.make_graph(
        nodes, "token_pool_causal_mask",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, seq]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq]),
         helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [batch, seq, width])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [batch, width]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, [batch, 1, seq, seq])],
        inits)
    return _checked(graph)


def token_pool_causal_mask_inputs(batch: int = 2, seq: int = 6, width: int = 4,
                                  eos: int = 7, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of token_pool_causal_mask: one end-of-text id a row at a different place,
    left padding in the second row, standard normal hidden states."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, eos, size=(batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    for b in range(batch):
        ids[b, (seq - 1 - 2 * b) % seq] = eos
        mask[b, :b] = 0
    hidden = rng.standard_normal((batch, seq, width)).astype(np.float32)
    return {"ids": ids, "attention_mask": mask, "hidden": hidden}


def grid_sampler(mode: str = "bilinear", padding_mode: str = "zeros", align_corners: int = 0,
                 data: tuple[int, ...] = (2, 3, 5, 7), out: tuple[int, int] = (4, 6)
                 ) -> onnx.ModelProto:
    """Deformable attention's sampling step: offsets [N, H_out, W_out, 2] from a 1x1 Conv of
    a query map, Tanh-squashed and scaled to reach past the border (to [-1.3, 1.3]), added
    to a base grid, then GridSample of the value map `x` at those positions."""
    n, c = data[0], data[1]
    rng = np.random.default_rng(0)
    base = np.stack(np.meshgrid(np.linspace(-1, 1, out[1]), np.linspace(-1, 1, out[0])),
                    axis=-1)[None].repeat(n, axis=0).astype(np.float32)
    inits = [numpy_helper.from_array(rng.normal(0, 1, (2, 4, 1, 1)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(0.6, np.float32), "reach"),
             numpy_helper.from_array(base, "base")]
    nodes = [helper.make_node("Conv", ["q", "w"], ["off"]),
             helper.make_node("Tanh", ["off"], ["squashed"]),
             helper.make_node("Mul", ["squashed", "reach"], ["scaled"]),
             helper.make_node("Transpose", ["scaled"], ["nhwc"], perm=[0, 2, 3, 1]),
             helper.make_node("Add", ["nhwc", "base"], ["grid"]),
             helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode,
                              padding_mode=padding_mode, align_corners=align_corners)]
    graph = helper.make_graph(nodes, "grid_sampler", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, list(data)),
        helper.make_tensor_value_info("q", TensorProto.FLOAT, [n, 4, *out])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, c, *out])], inits)
    return _checked(graph)


def _checked(graph: onnx.GraphProto) -> onnx.ModelProto:
    """An opset-17, IR-8 model of `graph`, through the ONNX checker."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="paleozoic_testing.host")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
