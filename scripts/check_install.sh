#!/usr/bin/env bash
# By hand, not in the test run: what a user sees on a fresh machine. In a new virtual
# environment without the system's packages, `pip install '<repo>[onednn]'` alone (default
# build isolation, no oneDNN installed beforehand) must give a working `--sdk onednn`: the
# module loads, `paleozoic build --sdk onednn` links, the session runs without
# LD_LIBRARY_PATH, and `verify` and `bench` pass on the bundled digits example. Then a
# second new environment with `pip install '<repo>'` (no extra): it installs no oneDNN,
# the mock works, and `--sdk onednn` fails with the error naming the extra.
#
# Usage: scripts/check_install.sh [WORK_DIR]
#   PYTHON=python3.11   interpreter for the environments (default python3)
#   PZ_SKIP_MOCK_ONLY=1 skip the second environment
# Needs g++, CMake >= 3.18 on PATH and PyPI; downloads apache-tvm and the other dependencies
# (about 2 minutes each environment on 2 cores, plus the build).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d -t pz-install.XXXXXX)}"
python="${PYTHON:-python3}"
mkdir -p "$work"
unset LD_LIBRARY_PATH PYTHONPATH
base_path="$PATH"

step() { printf '\n== %s\n' "$*"; }
timed() {  # command...: runs it, then prints its wall time
  local start=$EPOCHREALTIME
  "$@"
  awk -v a="$start" -v b="$EPOCHREALTIME" -v c="$*" 'BEGIN { printf "   [%.1f s] %s\n", b - a, c }'
}
use_venv() {  # folder: a new environment, first on PATH
  rm -rf "$1"
  "$python" -m venv "$1"
  export VIRTUAL_ENV="$1" PATH="$1/bin:$base_path"
  python -m pip install --quiet --upgrade pip
}

model="$root/examples/digits/digits_cnn.onnx"
echo "check_install: work dir $work, $("$python" --version), $(cmake --version | head -n 1)"
# What a fresh clone holds (no build/ folder of earlier builds), copied so that editing the
# checkout meanwhile cannot change the package between pip's metadata and wheel steps.
if git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
  rm -rf "$work/src"
  mkdir -p "$work/src"
  git -C "$root" ls-files -z --cached --others --exclude-standard \
      | (cd "$root" && tar --null -T - -cf -) | tar -C "$work/src" -xf -
  root="$work/src"
fi

# Outside any checkout: `python -` would import the source tree's unbuilt paleozoic.
cd "$work"

step "fresh environment: pip install '$root[onednn]'"
use_venv "$work/venv-onednn"
timed python -m pip install --quiet "$root[onednn]"
python -m pip list 2>/dev/null | grep -i -E "^(paleozoic|onednn)"

step "the oneDNN SDK loads, on this environment's libdnnl"
python - <<'PY'
from paleozoic.runner.sdk import runtime_module
module = runtime_module("onednn")
print(module.__file__)
print(*sorted({line.split()[-1] for line in open("/proc/self/maps") if "libdnnl" in line}))
PY
readelf -d "$(python -c 'import paleozoic._runtime_onednn as m; print(m.__file__)')" \
    | grep -E "RUNPATH|RPATH"

step "compile, build --sdk onednn, run without LD_LIBRARY_PATH"
paleozoic compile "$model" -o "$work/digits" --plan fuse-all --force
timed paleozoic build "$work/digits" --sdk onednn
ldd "$work/digits/build/session" | grep dnnl
(cd "$work/digits" && ./build/session -w weights.bin | tail -n 2)

step "onnxruntime, the reference verify and bench compare with (the verify extra)"
timed python -m pip install --quiet 'onnxruntime>=1.17'

step "paleozoic verify --sdk onednn"
timed paleozoic verify "$work/digits" --seed 0

step "paleozoic bench --sdk mock,onednn"
timed paleozoic bench "$model" --sdk mock,onednn --plan fuse-all --threads 2 --repeat 20

if [ "${PZ_SKIP_MOCK_ONLY:-0}" != 1 ]; then
  step "fresh environment: pip install '$root' (no extra)"
  use_venv "$work/venv-mock"
  rm -rf "$root/build"  # the first install's build folder
  timed python -m pip install --quiet "$root"
  if python -m pip list 2>/dev/null | grep -i "^onednn"; then
    echo "check_install: FAIL, the plain install brought oneDNN in" >&2
    exit 1
  fi
  paleozoic compile "$model" -o "$work/digits-mock" --force
  timed paleozoic build "$work/digits-mock"
  (cd "$work/digits-mock" && ./build/session -w weights.bin | tail -n 1)
  step "--sdk onednn without the extra: a clear error, exit 5"
  set +e
  paleozoic build "$work/digits-mock" --sdk onednn
  code=$?
  set -e
  echo "exit code $code"
  [ "$code" = 5 ]
fi
printf '\ncheck_install: OK\n'
