"""ONNX LSTM, GRU and RNN: their rows in the operator table. TVM's Relax ONNX frontend has
no converter for them, so they never reach a Relax binding: paleozoic.frontend.recurrent
cuts them out of the graph TVM parses and emits their layers (Lstm, Gru, Rnn) beside the
walk."""

from __future__ import annotations

from paleozoic.frontend.convert.registry import OnnxOp, onnx_ops

onnx_ops({
    # W, R, B (and LSTM's P) are weights; sequence_lens must be constant (and full);
    # initial_h / initial_c are activations (or constants of zeros).
    "LSTM": OnnxOp("Lstm (per output consumed: Y, Y_h, Y_c)", weights=(1, 2, 3, 7),
                   parameters=(4,)),
    "GRU": OnnxOp("Gru (per output consumed: Y, Y_h)", weights=(1, 2, 3), parameters=(4,)),
    "RNN": OnnxOp("Rnn (per output consumed: Y, Y_h)", weights=(1, 2, 3), parameters=(4,)),
})
