"""A BERT-style encoder built with onnx.helper the way HuggingFace's BertModel exports:
integer inputs, embeddings by Gather, the additive attention mask built from an int64 mask,
and a symbolic sequence axis that `input_shapes` fixes at compile time.

    input_ids, token_type_ids, attention_mask: int64 [batch, "seq"]
    embeddings = Gather(word, input_ids) + Gather(type, token_type_ids)
               + Gather(position, Slice(position_ids, 0, Shape(input_ids)[1]))  -> LayerNorm
    mask = (1 - Cast(Unsqueeze(attention_mask, [1, 2]))) * -10000
    per layer: Q, K, V (MatMul + bias) -> heads -> MatMul(Q, K^T) * 1/sqrt(d) + mask
               -> Softmax -> MatMul(., V) -> merge -> MatMul + bias -> Add -> LayerNorm
               -> MatMul + bias -> GELU (PyTorch's erf form) -> MatMul + bias -> Add
               -> LayerNorm
    pooler = Tanh(MatMul(hidden[:, 0]) + bias)
    outputs: last_hidden_state [batch, seq, dim], pooler_output [batch, dim]

    from paleozoic_testing.bert import bert_model
    model = bert_model(seed=0)       # compile with input_shapes={name: (2, 16) for each}
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from paleozoic_testing.sequence import _gelu, _layer_norm
from paleozoic_testing.workloads import _Graph

BERT_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def _int_init(g: _Graph, name: str, value: np.ndarray) -> str:
    g.inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), name))
    return name


def _dense(g: _Graph, x: str, cin: int, cout: int) -> str:
    name = g._name("dense")
    w = g._init(f"{name}.weight", g.rng.normal(0.0, 1.0 / np.sqrt(cin), size=(cin, cout)))
    b = g._init(f"{name}.bias", g.rng.normal(0.0, 0.1, size=cout))
    return g.op("Add", [g.op("MatMul", [x, w]), b])


def _attention(g: _Graph, x: str, mask: str, dim: int, heads: int) -> str:
    head = dim // heads
    split = _int_init(g, g._name("split.shape"), np.array([0, -1, heads, head]))
    merge = _int_init(g, g._name("merge.shape"), np.array([0, -1, dim]))
    q, k, v = (g.op("Transpose", [g.op("Reshape", [_dense(g, x, dim, dim), split])], perm=perm)
               for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
    scale = g._init(g._name("scale"), np.array(1.0 / np.sqrt(head)))
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), mask])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    return g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])


def bert_model(seed: int = 0, batch: int = 2, seq: int | str = "seq", vocab: int = 50,
               dim: int = 32, heads: int = 4, hidden: int = 64, layers: int = 1,
               max_positions: int = 64) -> onnx.ModelProto:
    """`seq` is the sequence axis: a name (symbolic, fixed by input_shapes) or a number."""
    g = _Graph("bert", seed, batch)
    word = g._init("word_embeddings", g.rng.normal(0.0, 1.0, size=(vocab, dim)))
    types = g._init("token_type_embeddings", g.rng.normal(0.0, 1.0, size=(2, dim)))
    positions = g._init("position_embeddings", g.rng.normal(0.0, 1.0, size=(max_positions, dim)))
    position_ids = _int_init(g, "position_ids", np.arange(max_positions)[None, :])
    # position_ids[:, :seq], the sequence length read from input_ids' shape.
    length = g.op("Gather", [g.op("Shape", ["input_ids"]), _int_init(g, "one", np.array(1))],
                  axis=0)
    ends = g.op("Unsqueeze", [length, _int_init(g, "axes0", np.array([0]))])
    sliced = g.op("Slice", [position_ids, _int_init(g, "starts", np.array([0])), ends,
                            _int_init(g, "axes1", np.array([1]))])
    embedded = g.op("Add", [g.op("Add", [g.op("Gather", [word, "input_ids"]),
                                         g.op("Gather", [types, "token_type_ids"])]),
                            g.op("Gather", [positions, sliced])])
    h = _layer_norm(g, embedded, dim)
    # HuggingFace's extended attention mask: (1 - mask[:, None, None, :]) * large negative.
    mask = g.op("Cast", [g.op("Unsqueeze", ["attention_mask",
                                            _int_init(g, "axes12", np.array([1, 2]))])],
                to=TensorProto.FLOAT)
    mask = g.op("Mul", [g.op("Sub", [g._init("one_f", np.array(1.0)), mask]),
                        g._init("neg", np.array(-10000.0))])
    for _ in range(layers):
        h = _layer_norm(g, g.op("Add", [h, _dense(g, _attention(g, h, mask, dim, heads), dim,
                                                  dim)]), dim)
        f = _dense(g, _gelu(g, _dense(g, h, dim, hidden), "erf"), hidden, dim)
        h = _layer_norm(g, g.op("Add", [h, f]), dim)
    first = g.op("Gather", [h, _int_init(g, "zero", np.array(0))], axis=1)
    pooled = g.op("Tanh", [_dense(g, first, dim, dim)])
    graph = helper.make_graph(
        g.nodes, g.name,
        [helper.make_tensor_value_info(name, TensorProto.INT64, [batch, seq])
         for name in BERT_INPUTS],
        [helper.make_tensor_value_info(h, TensorProto.FLOAT, [batch, seq, dim]),
         helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [batch, dim])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="paleozoic_testing.bert")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def bert_inputs(seed: int = 0, batch: int = 2, seq: int = 16,
                vocab: int = 50) -> dict[str, np.ndarray]:
    """Token ids over the whole vocabulary, both token types, and a mask that really masks:
    each row keeps a prefix (at least one token) and pads the rest."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    for row in mask:
        row[int(rng.integers(1, seq)):] = 0
    return {"input_ids": rng.integers(0, vocab, size=(batch, seq)).astype(np.int64),
            "token_type_ids": rng.integers(0, 2, size=(batch, seq)).astype(np.int64),
            "attention_mask": mask}
