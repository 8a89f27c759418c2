#!/usr/bin/env bash
# The demo: installs the build tools if missing, builds only what the demo
# runs (the loader, the runtime, symmrun, four examples), runs the examples
# on 4 PEs with symmrun.
#   bash scripts/demo.sh
# Backend: CUDA when this machine has a GPU (nvidia-smi -L lists one) or
# SYMM_DEMO_CUDA=1 asks for it (the runtime then carries the CUDA kernels and
# still runs on the host backend where no GPU is usable); the host backend
# otherwise, which compiles in seconds. SYMM_DEMO_CUDA=0 forces the host
# backend. Each backend has its own build directory (build-demo,
# build-demo-cuda; SYMM_BUILD_DIR names another).
set -u
cd "$(dirname "$0")/.."
t0=$SECONDS
. scripts/deps.sh
symm_deps_build || exit 1

GPUS=
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  GPUS=$(nvidia-smi -L | grep -c '^GPU')
fi
case "${SYMM_DEMO_CUDA:-}" in
  1) cuda=1; why="SYMM_DEMO_CUDA=1" ;;
  0) cuda=; why="SYMM_DEMO_CUDA=0" ;;
  *) if [ -n "$GPUS" ]; then cuda=1; why="nvidia-smi -L lists $GPUS GPU(s)"
     else cuda=; why="no GPU (nvidia-smi -L lists none); SYMM_DEMO_CUDA=1 builds the CUDA backend"; fi ;;
esac
if [ -n "$cuda" ]; then
  echo "== backend: CUDA ($why)"
  BUILD=${SYMM_BUILD_DIR:-build-demo-cuda}
  # tests on: the GPU ring below (tests/gpu/device_ring) is a test program
  opts=(-Dcuda=enabled -Dtests=enabled)
else
  echo "== backend: host ($why)"
  BUILD=${SYMM_BUILD_DIR:-build-demo}
  opts=(-Dcuda=disabled -Dtests=disabled)
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  log=$(mktemp)
  meson setup "$BUILD" -Dbuildtype=release "${opts[@]}" -Dbindings=disabled -Dfuzz=disabled \
    -Dibverbs=disabled -Dofi=disabled >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
  rm -f "$log"
fi
# meson's target names (meson compile finds their files)
targets=(symm symm_runtime symmrun ring fallback jacobi pipeline)
[ -n "$cuda" ] && [ -n "$GPUS" ] && targets+=(device_ring)
[ -n "$cuda" ] && echo "== compiling the CUDA kernels (minutes on 2 cores)"
meson compile -C "$BUILD" "${targets[@]}" >"$BUILD/demo-build.log" 2>&1 ||
  { cat "$BUILD/demo-build.log"; echo "demo: build failed"; exit 1; }
echo "== built in $((SECONDS - t0)) s ($BUILD)"

NP=${NP:-4}
if [ -n "$cuda" ] && [ -n "$GPUS" ]; then
  NP=$GPUS
  export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
  echo "== running on $NP PEs (one per GPU)"
fi
run() { echo; echo "== $*"; "$@" || { echo "demo: '$*' failed"; exit 1; }; }
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/ring"
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/fallback"
echo; echo "== fallback without a runtime (SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1)"
SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1 "$BUILD/examples/fallback" || exit 1
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/jacobi/jacobi" --check
run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/examples/pipeline/pipeline"
if [ -n "$cuda" ] && [ -n "$GPUS" ]; then
  run "$BUILD/runtime/symmrun" -n "$NP" "$BUILD/tests/gpu/device_ring"
fi
echo; echo "demo: done in $((SECONDS - t0)) s"
