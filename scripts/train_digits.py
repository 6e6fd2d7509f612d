#!/usr/bin/env python3
"""Trains the small digits CNN whose ONNX file is committed in examples/digits/ (real data
for precision work, nothing downloaded): scikit-learn's bundled handwritten digits (1,797
8x8 images, 0..16), scaled to [0, 1], split 70 / 10 / 20 % (train / calibration / held-out
test) with a fixed seed; a two-convolution network trained with Adam in PyTorch, exported
at opset 13 with batch 1, and the calibration and test splits saved beside it.

    python scripts/train_digits.py [-o examples/digits] [--epochs 60] [--seed 0]

Needs torch, onnx and scikit-learn (not project dependencies: the outputs are committed)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> int:
    import torch
    from sklearn.datasets import load_digits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="examples/digits")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # [N, 1, 8, 8]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(x))
    n_train, n_calib = int(0.7 * len(x)), int(0.1 * len(x))
    train, calib, test = np.split(order, [n_train, n_train + n_calib])

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10))
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
    for epoch in range(args.epochs):
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            batch = perm[i:i + 64]
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[batch]), yt[batch])
            loss.backward()
            optimiser.step()
    model.eval()
    with torch.no_grad():
        predicted = model(torch.from_numpy(x[test])).argmax(1).numpy()
    accuracy = float(np.mean(predicted == y[test]))
    print(f"held-out top-1: {accuracy:.4f} on {len(test)} images")

    torch.onnx.export(model, torch.zeros(1, 1, 8, 8), str(out / "digits_cnn.onnx"),
                      input_names=["image"], output_names=["logits"], opset_version=13,
                      dynamo=False)
    np.savez_compressed(out / "digits_data.npz", calib_x=x[calib], calib_y=y[calib],
                        test_x=x[test], test_y=y[test])
    print(f"wrote {out / 'digits_cnn.onnx'} and {out / 'digits_data.npz'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
