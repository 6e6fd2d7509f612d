"""Writes a classic CNN with seeded random weights as an ONNX file for the demo.

The onnx wheel ships the model zoo's light_* graphs with every weight set to one
constant; this gives them real (seeded) weights. Usage:
    python examples/make_example.py squeezenet examples/build/squeezenet.onnx
"""

from __future__ import annotations

import argparse
from pathlib import Path

import onnx

from paleozoic_testing.zoo import ZOO_MODELS, load_zoo_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=ZOO_MODELS)
    parser.add_argument("output", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(load_zoo_model(args.model, args.seed), str(args.output))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
