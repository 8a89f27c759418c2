#!/usr/bin/env bash
# The demo: installs what is missing, builds, runs the examples on 4 PEs with
# symmrun. The backend is chosen automatically: CUDA when this machine has a
# usable GPU (and nvcc was found at build time), the host backend otherwise.
#   bash scripts/demo.sh
set -u
cd "$(dirname "$0")/.."
. scripts/deps.sh
symm_deps || exit 1
BUILD=${SYMM_BUILD_DIR:-build-demo}
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" -Dbuildtype=release >/dev/null || exit 1
ninja -C "$BUILD" >/dev/null || { ninja -C "$BUILD"; exit 1; }
NP=${NP:-4}
GPUS=
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  GPUS=1
  NP=$(nvidia-smi -L | wc -l)
  export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
  echo "== GPUs found: running on $NP PEs (one per GPU)"
fi
run() { echo; echo "== $*"; "$@" || { echo "demo: '$*' failed"; exit 1; }; }
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/ring"
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/fallback"
echo; echo "== fallback without a runtime (SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1)"
SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1 "$BUILD/examples/fallback" || exit 1
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/jacobi/jacobi" --check
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/pipeline/pipeline"
if [ -n "${GPUS:-}" ] && [ -x "$BUILD/tests/gpu/device_ring" ]; then
  run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/tests/gpu/device_ring"
fi
echo; echo "demo: done"
