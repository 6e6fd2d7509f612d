"""One recurrent op (LSTM / GRU, 50 steps, input 64) on the oneDNN SDK compiled for MP 1 and
MP 2, over hidden sizes and batches: where a second thread pays for its per-step barrier.
The SDK core runs a recurrent op on one thread below kOneThreadStepFlops of work per step
(runtime_cpp/sdk/core/executor.cpp), so rows under it print about 1.00; rows above it show what
the second thread brings (a ratio above 1 there means the threshold is too low).

    python benchmarks/rnn_threads.py
"""

from __future__ import annotations

import time

import numpy as np

from paleozoic.runner.sdk import runtime_module
from paleozoic_testing.recurrent import random_weights


def forward_ms(rt, op: str, hidden: int, batch: int, mp: int, steps: int = 50,
               input_size: int = 64, repeat: int = 15) -> float:
    s = rt.Session()
    rng = np.random.default_rng(0)
    x = s.input("x", [steps, batch, input_size])
    w = random_weights(op, input_size, hidden, 1, rng)
    make = s.lstm if op == "LSTM" else s.gru
    layer = make("l", [x], hidden_size=hidden, direction="forward", layout=0, output="y")
    layer.config(w["W"], w["R"], w["B"])
    s.mark_output(layer.output)
    s.compile_block("b", fuse=False, mp=mp, layers=[layer], precision="fp32")
    s.set_input(x, rng.standard_normal((steps, batch, input_size)).astype(np.float32))
    for _ in range(3):
        s.run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        s.run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> None:
    rt = runtime_module("onednn")
    print(f"{'cell':5} {'H':>5} {'B':>3} {'MP 1 ms':>9} {'MP 2 ms':>9} {'ratio':>6} "
          f"{'flops/step':>11}")
    for op, gates in (("LSTM", 4), ("GRU", 3)):
        for hidden in (64, 128, 256, 512, 1024):
            for batch in (1, 8):
                one = forward_ms(rt, op, hidden, batch, 1)
                two = forward_ms(rt, op, hidden, batch, 2)
                step = 2 * batch * gates * hidden * hidden
                print(f"{op:5} {hidden:5d} {batch:3d} {one:9.3f} {two:9.3f} {two / one:6.2f} "
                      f"{step:11d}")


if __name__ == "__main__":
    main()
