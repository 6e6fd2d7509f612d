"""A small decoder language model with a KV cache, in the form HuggingFace exports one
(input_ids, attention_mask, position_ids, past_key_i / past_value_i in; logits and
present_key_i / present_value_i out, present = past then this step's), with symbolic token
and cache lengths: test material for `paleozoic compile --generate`, built with onnx alone.
Random weights large enough that greedy decoding wanders over the vocabulary instead of
repeating one token. `greedy_reference` is onnxruntime's generation with a growing cache."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_decoder(layers: int = 2, heads: int = 2, dim: int = 8, vocab: int = 64,
                 positions: int = 256, seed: int = 0) -> onnx.ModelProto:
    width = heads * dim
    rng = np.random.default_rng(seed)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def weight(name: str, rows: int, cols: int, scale: float) -> str:
        return const(name, (rng.standard_normal((rows, cols)) * scale).astype(np.float32))

    wte = weight("wte", vocab, width, 1.0)
    wpe = weight("wpe", positions, width, 0.5)
    x = node("Add", [node("Gather", [wte, "input_ids"], "tok_emb"),
                     node("Gather", [wpe, "position_ids"], "pos_emb")], "x0")
    # Which cache slots each query sees: slot j for the query in slot (window - tokens + i)
    # when j is at or before it and the attention mask keeps j. Shapes only: folded at
    # compile time once the lengths are fixed.
    one = const("one", np.array([1], np.int64))
    zero = const("zero", np.array(0, np.int64))
    step = const("step", np.array(1, np.int64))
    tokens = node("Squeeze", [node("Gather", [node("Shape", ["input_ids"], "ids_shape"), one],
                                   "tokens_1")], "tokens")
    window = node("Squeeze", [node("Gather", [node("Shape", ["attention_mask"], "mask_shape"),
                                              one], "window_1")], "window")
    query_slot = node("Add", [node("Range", [zero, tokens, step], "query_range"),
                              node("Sub", [window, tokens], "first_slot")], "query_slot")
    key_slot = node("Range", [zero, window, step], "key_slot")
    causal = node("LessOrEqual", [
        node("Unsqueeze", [key_slot, const("axis0", np.array([0], np.int64))], "key_row"),
        node("Unsqueeze", [query_slot, const("axis1", np.array([1], np.int64))], "query_col")],
        "causal")
    keep = node("Reshape", [node("Cast", ["attention_mask"], "keep_bool", to=TensorProto.BOOL),
                            const("mask_view", np.array([1, 1, 1, -1], np.int64))], "keep")
    visible = node("And", [causal, keep], "visible")
    bias = node("Where", [visible, const("no_bias", np.array(0.0, np.float32)),
                          const("ninf", np.array(-np.inf, np.float32))], "bias")
    heads_view = const("heads_view", np.array([1, -1, heads, dim], np.int64))
    merged_view = const("merged_view", np.array([1, -1, width], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(dim), np.float32))
    outputs = ["logits"]
    for i in range(layers):
        def split(name: str) -> str:
            projected = node("MatMul", [x, weight(f"w{name}{i}", width, width,
                                                  1.0 / np.sqrt(width))], f"{name}{i}")
            viewed = node("Reshape", [projected, heads_view], f"{name}{i}_heads")
            return node("Transpose", [viewed], f"{name}{i}_t", perm=[0, 2, 1, 3])

        q, k, v = split("q"), split("k"), split("v")
        keys = node("Concat", [f"past_key_{i}", k], f"present_key_{i}", axis=2)
        values = node("Concat", [f"past_value_{i}", v], f"present_value_{i}", axis=2)
        outputs += [keys, values]
        scores = node("Mul", [node("MatMul", [q, node("Transpose", [keys], f"kt{i}",
                                                         perm=[0, 1, 3, 2])], f"qk{i}"),
                              scale], f"scores{i}")
        probs = node("Softmax", [node("Add", [scores, bias], f"masked{i}")], f"probs{i}",
                     axis=-1)
        attended = node("Transpose", [node("MatMul", [probs, values], f"att{i}")],
                        f"att{i}_t", perm=[0, 2, 1, 3])
        merged = node("Reshape", [attended, merged_view], f"att{i}_merged")
        x = node("Add", [x, node("MatMul", [merged, weight(f"wo{i}", width, width,
                                                            1.0 / np.sqrt(width))],
                                 f"proj{i}")], f"x{i + 1}_attn")
        hidden = node("Relu", [node("MatMul", [x, weight(f"w1_{i}", width, 4 * width,
                                                          1.0 / np.sqrt(width))], f"fc{i}")],
                      f"relu{i}")
        x = node("Add", [x, node("MatMul", [hidden, weight(f"w2_{i}", 4 * width, width,
                                                            0.5 / np.sqrt(width))],
                                 f"mlp{i}")], f"x{i + 1}")
    node("MatMul", [x, weight("lm_head", width, vocab, 1.0 / np.sqrt(width))], "logits")
    cache = ["batch", heads, "cached", dim]
    graph = helper.make_graph(
        nodes, "tiny_decoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "window"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "tokens"])] +
        [helper.make_tensor_value_info(f"past_{kind}_{i}", TensorProto.FLOAT, cache)
         for i in range(layers) for kind in ("key", "value")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "tokens", vocab])] +
        [helper.make_tensor_value_info(f"present_{kind}_{i}", TensorProto.FLOAT,
                                       ["batch", heads, "window", dim])
         for i in range(layers) for kind in ("key", "value")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="paleozoic_testing.decoder")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def greedy_reference(model: onnx.ModelProto | str, prompt: list[int],
                     new_tokens: int) -> list[int]:
    """onnxruntime's greedy generation: the prompt in one step over an empty cache, then one
    token a step with the cache growing (no window, no padding)."""
    import onnxruntime as ort

    source = model if isinstance(model, str) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    past = {name: np.zeros((1, inputs[name].shape[1], 0, inputs[name].shape[3]), np.float32)
            for name in inputs if name.startswith("past")}
    ids, positions = np.array([prompt], np.int64), np.arange(len(prompt))[None]
    total, generated = len(prompt), []
    while len(generated) < new_tokens:
        out = dict(zip(names, session.run(None, {
            "input_ids": ids, "attention_mask": np.ones((1, total), np.int64),
            "position_ids": positions, **past})))
        token = int(np.argmax(out["logits"][0, -1]))
        generated.append(token)
        past = {name: out[name.replace("past", "present", 1)] for name in past}
        ids, positions = np.array([[token]], np.int64), np.array([[total]], np.int64)
        total += 1
    return generated
