#!/usr/bin/env bash
# The Python package on GPUs with PyTorch: pip install (the wheel built by the
# project's Meson build, CUDA on), the torch tests under torchrun in three
# modes (torchrun environment, unique id through torch.distributed, runtime
# missing), then tests/perf/bench_torch.py on 2 ranks and, with 4 or more
# GPUs, on every GPU. Run by scripts/gpu-suite.sh; standalone:
#   bash bindings/python/gpu_test.sh BUILD_DIR OUT_DIR [GPU_ARCHS] [C_RESULTS]
# BUILD_DIR: a CUDA build (its runtime is used if pip install fails, which the
# summary then says). C_RESULTS: bench_symm's BENCH_RESULTS file (the C API's
# reduce_on_stream figures); made here (BENCH_SECTIONS=red) when absent.
# Writes OUT_DIR/python.log, bench_torch.txt, bench_torch*.json and prints
# "python: ..." summary lines.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:?usage: gpu_test.sh BUILD_DIR OUT_DIR [GPU_ARCHS] [C_RESULTS]}
OUT=${2:?usage}
ARCHS=${3:-90}
CRES=${4:-}
cd "$ROOT"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
LOG=$OUT/python.log
: > "$LOG"
PY=python3
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
NP=$(( NGPU > 2 ? NGPU : 2 ))
echo "python: $($PY --version 2>&1), torch $($PY -c 'import torch; print(torch.__version__)' 2>&1 | tail -1), cupy $($PY -c 'import cupy; print(cupy.__version__)' 2>&1 | tail -1); $NGPU GPU(s), $NP ranks"

# 1. pip install from this checkout (meson-python, pyproject.toml at the
#    root), offline (--no-index: meson, ninja and meson-python come from the
#    machine), first exactly as a user types it (pip's build isolation on,
#    which needs meson-python in pip's find-links), then, only if that fails,
#    with --no-build-isolation (meson-python installed for $PY).
#    The GPU machines reach no index: the build requirements (meson-python,
#    meson, pyproject-metadata, packaging, ninja) come as wheels in $ROOT/.whl
#    when the caller carried them there (scripts/gpu-wheels.sh), which pip's
#    build isolation then takes as its index.
SITE=$(mktemp -d /tmp/symm-pysite.XXXXXX)
if [ -d "$ROOT/.whl" ] && ls "$ROOT"/.whl/meson_python-*.whl >/dev/null 2>&1; then
  export PIP_FIND_LINKS="$ROOT/.whl"
fi
pip_install() {  # extra pip arguments
  rm -rf "$SITE" && mkdir -p "$SITE"
  timeout 300 $PY -m pip install -q --no-index --no-deps --disable-pip-version-check "$@" \
    -Cbuild-dir="$ROOT/build-wheel-gpu" -Csetup-args=-Dcuda=enabled \
    -Csetup-args=-Dgpu_archs="$ARCHS" --target "$SITE" "$ROOT" >> "$LOG" 2>&1 &&
    [ -f "$SITE/symm/_lib/libsymm_runtime.so.1" ]
}
t0=$SECONDS
how=""
if pip_install; then
  how="plain, build isolation on"
elif echo "===== retry with --no-build-isolation" >> "$LOG" && pip_install --no-build-isolation; then
  how="only with --no-build-isolation: the plain install FAILED (python.log)"
fi
if [ -n "$how" ]; then
  echo "python: pip install --no-index . (CUDA on): ok ($how; $((SECONDS - t0)) s, $PY)"
  RUNENV=(env -u SYMM_LOADER -u SYMM_RUNTIME PYTHONPATH="$SITE")
  if "${RUNENV[@]}" "$SITE/symm/_lib/symm-info" > "$OUT/symm-info-wheel.txt" 2>&1; then
    echo "python: the wheel's symm-info: runtime $(sed -n 's/^Runtime  //p' "$OUT/symm-info-wheel.txt"), $(grep -c 'GPU [0-9]*:' "$OUT/symm-info-wheel.txt") GPU(s), $(tail -1 "$OUT/symm-info-wheel.txt")"
  else
    echo "python: the wheel's symm-info: FAILED (symm-info-wheel.txt)"
  fi
else
  echo "python: pip install . (CUDA on): FAILED (see python.log); testing the source tree with $BUILD"
  tail -5 "$LOG"
  RUNENV=(env PYTHONPATH="$ROOT/bindings/python" SYMM_LOADER="$BUILD/loader/libsymm.so.1"
          SYMM_RUNTIME="$BUILD/runtime/libsymm_runtime.so.1")
fi

# 2. the torch tests, under torchrun
pass=0; fail=0
run_mode() {  # mode [env command and assignments]; $label (optional) names the run
  local mode=$1; shift
  local name=${label:-$mode}
  echo "===== test_torch_gpu.py $name ($NP ranks)" >> "$LOG"
  local from; from=$(( $(wc -l < "$LOG") + 1 ))
  if "$@" timeout -k 5 120 $PY -m torch.distributed.run --standalone --nproc_per_node=$NP \
       bindings/python/tests/test_torch_gpu.py "$mode" >> "$LOG" 2>&1; then
    pass=$((pass + 1)); echo "python: torch tests, $name: ok ($(tail -n +$from "$LOG" | grep -oE "$mode\] [0-9]+ passed" | awk '{s += $2} END {print s + 0}') case passes over $NP ranks)"
  else
    local rc=$?
    fail=$((fail + 1)); echo "python: torch tests, $name: FAILED (exit $rc$([ $rc = 124 ] && echo ': ran past 120 s'))"
    tail -n +$from "$LOG" | grep -E "FAIL|Error|error|SKIP" | sort | uniq -c | sort -rn | head -8
  fi
}
run_mode env "${RUNENV[@]}"
run_mode uid "${RUNENV[@]}"
run_mode fallback "${RUNENV[@]}" SYMM_RUNTIME=/nonexistent
# every rank its own simulated host (tests/harness.py: SYMM_HOST_ID per rank,
# tcp): peers of other hosts through the GPU proxy. With eager loading: torch
# loads each kernel at its first launch otherwise, and a first launch while a
# stream waits for a PE of another host can hang (docs/PROXY.md "Lazy loading").
# Traced: a line a step, every thread's Python stack after 90 s, and symm's
# long waits saying what they wait for.
HOSTS_TRACE=(CUDA_MODULE_LOADING=EAGER SYMM_TEST_TRACE=1 SYMM_DEBUG=INFO SYMM_DEBUG_SUBSYS=wait)
label="env, $NP simulated hosts" run_mode env "${RUNENV[@]}" SYMM_TEST_HOSTS=$NP "${HOSTS_TRACE[@]}"
label="uid, $NP simulated hosts" run_mode uid "${RUNENV[@]}" SYMM_TEST_HOSTS=$NP "${HOSTS_TRACE[@]}"
grep -h "SKIP" "$LOG" | sort -u | head -3

# 3. the benchmark (before the examples: it is what the run is for)
if [ -z "$CRES" ] || [ ! -s "$CRES" ]; then
  CRES=$OUT/.c_red; rm -f "$CRES"
  if [ -x "$BUILD/tests/perf/bench_symm" ]; then
    BENCH_SECTIONS=red BENCH_RESULTS=$CRES timeout -k 5 120 "$BUILD/runtime/symmrun" -n 2 \
      --timeout 110 "$BUILD/tests/perf/bench_symm" >> "$LOG" 2>&1
  fi
fi
: > "$OUT/bench_torch.txt"
nps=2; [ "$NGPU" -ge 4 ] && nps="2 $NGPU"
for np in $nps; do
  echo "command: python3 -m torch.distributed.run --standalone --nproc_per_node=$np tests/perf/bench_torch.py --json bench_torch_$np.json --c-results $(basename "$CRES")" >> "$OUT/bench_torch.txt"
  if "${RUNENV[@]}" timeout -k 5 180 $PY -m torch.distributed.run --standalone --nproc_per_node=$np \
       tests/perf/bench_torch.py --json "$OUT/bench_torch_$np.json" --c-results "$CRES" \
       >> "$OUT/bench_torch.txt" 2>&1; then
    pass=$((pass + 1)); echo "python: bench_torch, $np ranks: ok"
  else
    fail=$((fail + 1)); echo "python: bench_torch, $np ranks: FAILED"; tail -5 "$OUT/bench_torch.txt"
  fi
done
# 4. the examples that use torch: N ranks under torchrun, then one process with
# the runtime missing (the fallback)
for ex in allreduce_torch moe_dispatch; do
  echo "===== example $ex" >> "$LOG"
  if "${RUNENV[@]}" timeout -k 5 120 $PY -m torch.distributed.run --standalone --nproc_per_node=$NP \
       examples/python/$ex.py >> "$LOG" 2>&1 &&
     "${RUNENV[@]}" SYMM_RUNTIME=/nonexistent timeout -k 5 60 $PY examples/python/$ex.py >> "$LOG" 2>&1; then
    pass=$((pass + 1)); echo "python: example $ex ($NP ranks, and one process without the runtime): ok"
  else
    fail=$((fail + 1)); echo "python: example $ex: FAILED"; grep -E "WRONG|DIFFER|Error" "$LOG" | tail -5
  fi
done
grep -hE "^rank [0-9]+/[0-9]+: symm.torch" "$LOG" | head -2

rm -rf "$SITE"
echo "python: $pass passed, $fail failed"
[ $fail = 0 ]
