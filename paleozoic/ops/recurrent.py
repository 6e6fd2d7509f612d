"""Recurrent layers: ONNX LSTM, GRU and RNN, each one layer whose wrapper class builds the
per-time-step SDK ops itself (cell substitution, runtime_cpp/include/paleozoic/
layers_recurrent.h). Weights keep ONNX's layout: W [D, G*H, I], R [D, G*H, H], B
[D, 2*G*H] (optional), LSTM's P [D, 3H] (optional); G gates in ONNX's order (LSTM i, o,
f, c; GRU z, r, h; RNN one)."""

from __future__ import annotations

from dataclasses import dataclass

from paleozoic.ops.elementwise import ACTIVATIONS
from paleozoic.ops.enums import CppEnum
from paleozoic.ops.kind import Attrs, LayerKind, Shape, ShapeError

RNN_DIRECTIONS = CppEnum.of("RnnDirection", "direction", "forward", "reverse", "bidirectional")

# Which of ONNX's outputs the layer produces (a layer has one output): Y, every step's h;
# Y_h, the last h of each direction; Y_c, LSTM's last cell state.
RNN_OUTPUTS = CppEnum.of("RnnOutput", "recurrent output", "y", "y_h", "y_c")


@dataclass(frozen=True)
class RecurrentAttrs:
    hidden_size: int
    direction: str = "forward"      # one of RNN_DIRECTIONS
    layout: int = 0                 # ONNX's: 0 time-major [T, B, I], 1 batch-major [B, T, I]
    output: str = "y"               # one of RNN_OUTPUTS


@dataclass(frozen=True)
class LstmAttrs(RecurrentAttrs):
    peepholes: bool = False         # the P weight is read


@dataclass(frozen=True)
class GruAttrs(RecurrentAttrs):
    linear_before_reset: bool = False


@dataclass(frozen=True)
class RnnAttrs(RecurrentAttrs):
    activation: str = "tanh"        # relu, sigmoid or tanh (ACTIVATIONS)


GATES = {"Lstm": 4, "Gru": 3, "Rnn": 1}
RNN_ACTIVATIONS = ("relu", "sigmoid", "tanh")


def _recurrent_shape(kind: str, attrs: Attrs, inputs: list[Shape]) -> Shape:
    states = 2 if kind == "Lstm" else 1
    if not 1 <= len(inputs) <= 1 + states:
        raise ShapeError(f"{kind} takes x and at most {states} initial state(s), got "
                         f"{len(inputs)} inputs")
    if attrs["direction"] not in RNN_DIRECTIONS:
        raise ShapeError(f"{kind} direction {attrs['direction']!r} is not one of "
                         f"{RNN_DIRECTIONS.values}")
    if attrs["output"] not in RNN_OUTPUTS or (attrs["output"] == "y_c" and kind != "Lstm"):
        raise ShapeError(f"{kind} output {attrs['output']!r} is not one it has")
    if attrs["layout"] not in (0, 1):
        raise ShapeError(f"{kind} layout {attrs['layout']} is not 0 or 1")
    if attrs["hidden_size"] < 1:
        raise ShapeError(f"{kind} hidden_size {attrs['hidden_size']} is not positive")
    x = tuple(inputs[0])
    if len(x) != 3:
        raise ShapeError(f"{kind} x must be 3-D, got {x}")
    layout, hidden = attrs["layout"], attrs["hidden_size"]
    d = 2 if attrs["direction"] == "bidirectional" else 1
    steps, batch = (x[0], x[1]) if layout == 0 else (x[1], x[0])
    state = (d, batch, hidden) if layout == 0 else (batch, d, hidden)
    for extra in inputs[1:]:
        if tuple(extra) != state:
            raise ShapeError(f"{kind} initial state has shape {tuple(extra)}, expected {state}")
    if attrs["output"] != "y":
        return state
    return (steps, d, batch, hidden) if layout == 0 else (batch, steps, d, hidden)


def lstm_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    return _recurrent_shape("Lstm", attrs, inputs)


def gru_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    return _recurrent_shape("Gru", attrs, inputs)


def rnn_shape(attrs: Attrs, inputs: list[Shape]) -> Shape:
    if attrs["activation"] not in RNN_ACTIVATIONS or attrs["activation"] not in ACTIVATIONS:
        raise ShapeError(f"Rnn activation {attrs['activation']!r} is not one of "
                         f"{RNN_ACTIVATIONS}")
    return _recurrent_shape("Rnn", attrs, inputs)


def _recurrent_macs(kind: str) -> object:
    def macs(attrs: Attrs, inputs: list[Shape], out: Shape) -> int:
        x = inputs[0]
        steps, batch = (x[0], x[1]) if attrs["layout"] == 0 else (x[1], x[0])
        d = 2 if attrs["direction"] == "bidirectional" else 1
        gh = GATES[kind] * attrs["hidden_size"]
        return d * steps * batch * gh * (x[2] + attrs["hidden_size"] + 4)
    return macs


LSTM = LayerKind(name="Lstm", shape=lstm_shape,
                 macs=_recurrent_macs("Lstm"),  # type: ignore[arg-type]
                 weight_roles=("W", "R"), optional_roles=("B", "P"), arity=None,
                 attrs=LstmAttrs)
GRU = LayerKind(name="Gru", shape=gru_shape,
                macs=_recurrent_macs("Gru"),  # type: ignore[arg-type]
                weight_roles=("W", "R"), optional_roles=("B",), arity=None, attrs=GruAttrs)
RNN = LayerKind(name="Rnn", shape=rnn_shape,
                macs=_recurrent_macs("Rnn"),  # type: ignore[arg-type]
                weight_roles=("W", "R"), optional_roles=("B",), arity=None, attrs=RnnAttrs)

FAMILY = (LSTM, GRU, RNN)
ENUMS = (RNN_DIRECTIONS, RNN_OUTPUTS)
