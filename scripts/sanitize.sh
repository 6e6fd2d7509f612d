#!/usr/bin/env bash
# Sanitizer run (CI and local): builds the runtime and the mock SDK with AddressSanitizer
# and UndefinedBehaviorSanitizer (PALEOZOIC_SANITIZE=ON, PALEOZOIC_NATIVE=OFF) in a plain
# cmake build, installs it into a scratch prefix, emits the sessions of three zoo models,
# builds them against that prefix (Paleozoic::runtime carries -fsanitize in its INTERFACE),
# runs them on seeded inputs and compares with onnxruntime (`paleozoic verify`). A hand-
# edited session (MP 33) must fail with the SDK's status and without a sanitizer report
# (the exception path leaks nothing). Any ASan/UBSan/LSan report fails the run. Then a
# ThreadSanitizer build runs several ResNet-50 sessions at once in one process (-s N), and
# Inception-v1 with its modules as stages (blocks run at once from several threads).
#
# Usage: scripts/sanitize.sh [WORK_DIR]     (needs the package and its test helpers installed: pip install . ./testing)
# With VALGRIND=1 it also builds the runtime without sanitizers (valgrind cannot run AVX-512
# or ASan binaries) and runs one session under valgrind memcheck.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -ge 1 ]; then
  work="$1"
else  # a scratch folder of ours: removed when the run passes (it holds about 2 GB of builds)
  work="$(mktemp -d -t pz-sanitize.XXXXXX)"
  trap 'status=$?; if [ "$status" -eq 0 ]; then rm -rf "$work"; fi' EXIT
fi
mkdir -p "$work"
jobs="${PZ_JOBS:-$(nproc)}"
models="${PZ_SAN_MODELS:-squeezenet:fuse-all shufflenet:per-layer inception_v1:fuse-all}"
echo "sanitize: work dir $work"

# The oneDNN SDK is checked when its wheels are installed (CI installs them). A runtime built
# with it holds the mock's SDK too, so each sanitizer builds the runtime once, for both SDKs.
pyprefix="$(python -c 'import sys; print(sys.prefix)')"
if [ -n "$(find "$pyprefix" -iname "dnnl*config.cmake" -print -quit 2>/dev/null)" ]; then
  onednn=ON
else
  onednn=OFF
fi

configure_runtime() {  # build dir, install prefix, extra cmake args...
  local build="$1" prefix="$2"; shift 2
  cmake -S "$root" -B "$build" -DPALEOZOIC_NATIVE=OFF -DPALEOZOIC_ONEDNN="$onednn" \
        -DCMAKE_PREFIX_PATH="$pyprefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_INSTALL_PREFIX="$prefix" "$@" > "$build.configure.log"
  cmake --build "$build" --parallel "$jobs" > "$build.build.log"
  cmake --install "$build" > "$build.install.log"
}

configure_runtime "$work/runtime-san" "$work/prefix-san" -DPALEOZOIC_SANITIZE=ON

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

python - "$work" $models <<'PY'
import sys
from pathlib import Path
import onnx
from paleozoic_testing.zoo import load_zoo_model
work = Path(sys.argv[1])
for spec in sys.argv[2:]:
    name = spec.split(":")[0]
    path = work / f"{name}.onnx"
    if not path.is_file():
        onnx.save(load_zoo_model(name), str(path))
PY

san_check() {  # log file: fail on any sanitizer report
  if grep -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$1"; then
    echo "sanitize: sanitizer report in $1" >&2
    exit 1
  fi
}

build_against() {  # session dir, prefix, extra cmake args...
  local dir="$1" prefix="$2"; shift 2
  cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
        "$@" > "$dir/configure.log"
  cmake --build "$dir/build" --parallel "$jobs" > "$dir/build.log"
}

for spec in $models; do
  name="${spec%%:*}"; plan="${spec#*:}"
  out="$work/$name-$plan"
  rm -rf "$out"
  paleozoic compile "$work/$name.onnx" -o "$out" --plan "$plan"
  build_against "$out" "$work/prefix-san"
  paleozoic verify "$out" 2>&1 | tee "$out/verify.log"
  san_check "$out/verify.log"
done

# A hand-edited MP out of range: refused with the SDK status, no leak on the way out.
first="${models%% *}"; name="${first%%:*}"; plan="${first#*:}"
edited="$work/$name-edited"
rm -rf "$edited" && cp -r "$work/$name-$plan" "$edited" && rm -rf "$edited/build"
sed -i -E 's/(constexpr pz::BlockKnobs kBlock0\{[a-z]+, )[0-9]+,/\133,/' "$edited/session.cpp"
grep -q 'kBlock0{[a-z]*, 33,' "$edited/session.cpp"
build_against "$edited" "$work/prefix-san"
set +e
(cd "$edited" && ./build/session -w weights.bin -o "$edited") > "$edited/run.log" 2>&1
status=$?
set -e
cat "$edited/run.log"
san_check "$edited/run.log"
if [ "$status" -ne 1 ] || ! grep -q "CNML_STATUS_INVALIDPARAM" "$edited/run.log"; then
  echo "sanitize: the MP-33 session should fail with exit 1 and CNML_STATUS_INVALIDPARAM" >&2
  exit 1
fi

# Reduced precision: the digits CNN calibrated and compiled in int8 with one fp16 block and
# a per-layer fp32 override (int8 kernels, host quantisation, casts inside and between
# blocks), the image converted by the fusion op's edge (load balance, MLU priority) and the
# MP-1 head issued on a DDR channel, run on real images. Identity with the pip-built runtime is not asked here (this
# build is not -march=native); the sanitizers are the point.
prec="$work/digits-precision"
rm -rf "$prec" && mkdir -p "$prec/calib"
python - "$root" "$prec" <<'PY'
import json, sys
from pathlib import Path
import numpy as np
root, prec = Path(sys.argv[1]), Path(sys.argv[2])
data = np.load(root / "examples/digits/digits_data.npz")
for i, image in enumerate(data["calib_x"][:32]):
    np.save(prec / "calib" / f"{i:02d}.npy", image[None].astype(np.float32))
data["test_x"][:1].astype(np.float32).tofile(prec / "image.bin")
plan = {"format": "paleozoic-plan", "version": 1, "blocks": [
    {"name": "convs", "mp": 4, "fuse": True, "precision": "int8",
     "layer_precision": {"t3_Relu": "fp32"},
     "layers": ["t0_Conv", "t1_Relu", "t2_Conv", "t3_Relu", "t4_MaxPool"]},
    {"name": "head", "mp": 1, "fuse": False, "precision": "fp16",
     "layers": ["t6_Gemm", "t7_Relu", "t8_Gemm"]}],
    "preprocess": {"image": "mlu_priority"}, "channel": 1}
(prec / "plan.json").write_text(json.dumps(plan))
PY
model="$root/examples/digits/digits_cnn.onnx"
paleozoic calibrate "$model" --data "$prec/calib" -o "$prec/calib.json"
paleozoic compile "$model" -o "$prec/out" --plan "$prec/plan.json" --calibration "$prec/calib.json"
grep -q "image.setDataPreprocessStrategy(CNML_MLU_PRIORITY);" "$prec/out/session.cpp"
grep -q "block.setChannel(kChannel);" "$prec/out/session.cpp"
build_against "$prec/out" "$work/prefix-san"
(cd "$prec/out" && ./build/session -w weights.bin -i "$prec/image.bin" -o "$prec/out") \
    2>&1 | tee "$prec/run.log"
san_check "$prec/run.log"
grep -q "convs .* int8" "$prec/run.log"

# The oneDNN SDK: its fused blocks hand values over in oneDNN's layouts, rebuild ops at
# link time and let a residual convolution write over its input's buffer. ResNet-50 (16
# in-place residual adds) and Inception-v1 (pooling and concat in channels last) fuse-all
# sessions under the sanitizers, checked against onnxruntime.
if [ "$onednn" = ON ]; then
  for name in resnet50 inception_v1; do
    [ -f "$work/$name.onnx" ] || python -c "import onnx, sys; from paleozoic_testing.zoo \
import load_zoo_model; onnx.save(load_zoo_model(sys.argv[1]), sys.argv[2])" \
        "$name" "$work/$name.onnx"
    out="$work/$name-onednn"
    rm -rf "$out"
    paleozoic compile "$work/$name.onnx" -o "$out" --plan fuse-all
    build_against "$out" "$work/prefix-san;$pyprefix" -DPALEOZOIC_SDK=onednn
    paleozoic verify "$out" 2>&1 | tee "$out/verify.log"
    san_check "$out/verify.log"
  done
  # int8 fuse-all on the oneDNN SDK: a conv writing the next conv's codes (requantised,
  # rebuilt at link time with an unsigned source), a max pool rebuilt over channels last
  # reading its producer's buffer, the classifier reading fp32 hand-overs.
  out="$work/digits-onednn-int8"
  rm -rf "$out"
  paleozoic compile "$model" -o "$out" --plan fuse-all --precision int8 \
      --calibration "$prec/calib.json"
  build_against "$out" "$work/prefix-san;$pyprefix" -DPALEOZOIC_SDK=onednn
  (cd "$out" && ./build/session -w weights.bin -i "$prec/image.bin" -o "$out") \
      2>&1 | tee "$out/run.log"
  san_check "$out/run.log"
  grep -q "int8" "$out/run.log"
else
  echo "sanitize: oneDNN is not installed; its SDK is not checked"
fi

# Several sessions at once (pz::RunContext, the session's -s N) under ThreadSanitizer:
# ResNet-50 per-layer and fuse-all, two and four sessions over one compiled model, each
# checking its outputs against the serial run bit for bit, on the mock SDK and, when it is
# installed, the oneDNN one. libgomp is not instrumented, so TSan cannot see its fork and
# join: the kernels' OpenMP regions run on one thread here (OMP_THREAD_LIMIT=1), and the
# threads under test are the sessions'.
tsan_check() {  # log file: fail on any ThreadSanitizer report
  if grep -E "WARNING: ThreadSanitizer|ThreadSanitizer: reported" "$1"; then
    echo "sanitize: ThreadSanitizer report in $1" >&2
    exit 1
  fi
}
[ -f "$work/resnet50.onnx" ] || python -c "import onnx, sys; from paleozoic_testing.zoo \
import load_zoo_model; onnx.save(load_zoo_model('resnet50'), sys.argv[1])" "$work/resnet50.onnx"
python -c "import numpy as np, sys; np.random.default_rng(0).standard_normal((1, 3, 224, 224))\
.astype(np.float32).tofile(sys.argv[1])" "$work/resnet50-input.bin"
configure_runtime "$work/runtime-tsan" "$work/prefix-tsan" -DPALEOZOIC_TSAN=ON
tsan_sdks="mock"
if [ "$onednn" = ON ]; then
  tsan_sdks="mock onednn"
fi
for sdk in $tsan_sdks; do
  for plan in per-layer fuse-all; do
    out="$work/resnet50-tsan-$sdk-$plan"
    rm -rf "$out"
    paleozoic compile "$work/resnet50.onnx" -o "$out" --plan "$plan"
    if [ "$sdk" = "mock" ]; then
      build_against "$out" "$work/prefix-tsan"
    else
      build_against "$out" "$work/prefix-tsan;$pyprefix" -DPALEOZOIC_SDK=onednn
    fi
    for n in 2 4; do
      if ! (cd "$out" && OMP_THREAD_LIMIT=1 TSAN_OPTIONS="halt_on_error=1" ./build/session \
          -w weights.bin -i "$work/resnet50-input.bin" -o "$out" -s "$n") > "$out/run-$n.log" 2>&1
      then
        tail -60 "$out/run-$n.log"
        echo "sanitize: $sdk $plan session with -s $n failed" >&2
        exit 1
      fi
      tsan_check "$out/run-$n.log"
      grep "concurrent sessions: $n .*bit-identical to the serial run" "$out/run-$n.log"
    done
  done
done

# Stages (pz::Stage: blocks that run at once from host threads the stage keeps, each on a
# queue of its own) under ThreadSanitizer: each Inception-v1 module's branches as a stage,
# checked against onnxruntime, then two and four such sessions at once.
[ -f "$work/inception_v1.onnx" ] || python -c "import onnx, sys; from paleozoic_testing.zoo \
import load_zoo_model; onnx.save(load_zoo_model('inception_v1'), sys.argv[1])" \
    "$work/inception_v1.onnx"
python - "$work/inception_v1.onnx" "$work/inception_v1-stages.json" <<'PY'
import sys
from pathlib import Path
from paleozoic.ir import Plan, PlannedBlock
from paleozoic.optimize.concat import parallel_regions
from paleozoic.optimize.space import SearchSpace
from paleozoic.pipeline import load_queue
queue = load_queue(sys.argv[1])
names = [layer.name for layer in queue.layers]
widest = {}
for region in parallel_regions(queue, SearchSpace.from_queue(queue)):
    if region.stop not in widest or region.start < widest[region.stop].start:
        widest[region.stop] = region
blocks, stages, at = [], [], 0
for region in sorted(widest.values(), key=lambda r: r.start):
    if region.start < at:
        continue
    blocks += [PlannedBlock(f"b{len(blocks) + k}", [names[i]], 2, False)
               for k, i in enumerate(range(at, region.start))]
    stages.append([])
    for branch in region.branches:
        blocks.append(PlannedBlock(f"b{len(blocks)}", [names[i] for i in branch], 1,
                                   len(branch) > 1))
        stages[-1].append(blocks[-1].name)
    at = region.stop
blocks += [PlannedBlock(f"b{len(blocks) + k}", [names[i]], 2, False)
           for k, i in enumerate(range(at, len(names)))]
Path(sys.argv[2]).write_text(Plan(blocks, strategy="stages", stages=stages).to_json())
print(f"sanitize: Inception-v1 with {len(stages)} stages")
PY
python -c "import numpy as np, sys; np.random.default_rng(0).standard_normal((1, 3, 224, 224))\
.astype(np.float32).tofile(sys.argv[1])" "$work/inception_v1-input.bin"
for sdk in $tsan_sdks; do
  out="$work/inception_v1-tsan-$sdk-stages"
  rm -rf "$out"
  paleozoic compile "$work/inception_v1.onnx" -o "$out" --plan "$work/inception_v1-stages.json"
  grep -q "std::vector<pz::Stage> stages;" "$out/session.cpp"
  if [ "$sdk" = "mock" ]; then
    build_against "$out" "$work/prefix-tsan"
  else
    build_against "$out" "$work/prefix-tsan;$pyprefix" -DPALEOZOIC_SDK=onednn
  fi
  OMP_THREAD_LIMIT=1 TSAN_OPTIONS="halt_on_error=1" paleozoic verify "$out" 2>&1 \
      | tee "$out/verify.log"
  tsan_check "$out/verify.log"
  for n in 2 4; do
    if ! (cd "$out" && OMP_THREAD_LIMIT=1 TSAN_OPTIONS="halt_on_error=1" ./build/session \
        -w weights.bin -i "$work/inception_v1-input.bin" -o "$out" -s "$n") \
        > "$out/run-$n.log" 2>&1
    then
      tail -60 "$out/run-$n.log"
      echo "sanitize: $sdk staged session with -s $n failed" >&2
      exit 1
    fi
    tsan_check "$out/run-$n.log"
    grep "concurrent sessions: $n .*bit-identical to the serial run" "$out/run-$n.log"
  done
done

if [ "${VALGRIND:-0}" = "1" ]; then
  configure_runtime "$work/runtime-plain" "$work/prefix-plain"
  out="$work/valgrind-$name"
  rm -rf "$out"
  paleozoic compile "$work/$name.onnx" -o "$out" --plan "$plan"
  build_against "$out" "$work/prefix-plain"
  (cd "$out" && OMP_NUM_THREADS=1 valgrind --tool=memcheck --error-exitcode=9 \
      --leak-check=full --errors-for-leak-kinds=definite,indirect \
      ./build/session -w weights.bin -o "$out") 2>&1 | tee "$out/valgrind.log" | tail -20
  grep -q "ERROR SUMMARY: 0 errors" "$out/valgrind.log"
fi
echo "sanitize: clean ($models)"
