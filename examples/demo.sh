#!/usr/bin/env bash
# The main job on a bundled example: ONNX in, C++ out, g++, run, checked against onnxruntime.
# Usage: bash examples/demo.sh [MODEL] [PLAN]   (defaults: squeezenet fuse-all)
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-squeezenet}"
plan="${2:-fuse-all}"
work="examples/build"

python -m pip install --quiet '.[test]' ./testing
python examples/make_example.py "$model" "$work/$model.onnx"
paleozoic inspect "$work/$model.onnx" | tail -n 1
paleozoic compile "$work/$model.onnx" -o "$work/${model}_session" --plan "$plan" --force
paleozoic build "$work/${model}_session"
echo "--- session report ---"
# The block table's end and the total, then what computed the ops (the report's last part).
(cd "$work/${model}_session" && ./build/session -w weights.bin > report.txt)
sed '/^kernels/,$d' "$work/${model}_session/report.txt" | tail -n 4
sed -n '/^kernels/,$p' "$work/${model}_session/report.txt"
echo "--- verify against onnxruntime ---"
paleozoic verify "$work/${model}_session"
