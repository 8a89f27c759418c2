#!/usr/bin/env bash
# Before/after figures on a GPU, alternating in one run (scripts/gpu-suite.sh
# phase "ab"; the before trees come from git here, since the GPU machine gets
# no .git):
#
#   bash scripts/gpu-ab.sh prepare              (here: writes .ab/, git-ignored)
#   bash scripts/gpu-ab.sh build BUILD          (there: the old runtime into build-absmall/, in the background)
#   bash scripts/gpu-ab.sh run BUILD OUT [ROUNDS]
#
# Two comparisons:
# - ls: the load/store path of the device header before the proxy branch
#   (AB_LS_COMMIT) and now: tests/perf/bench_symm.cu of each commit compiled
#   with the same nvcc line against its own headers, both run on this
#   build's loader and runtime (BENCH_SECTIONS=dev,pp: device block-put
#   bandwidth and device p ping-pong). Only the header differs.
# - small: the CUDA backend's host-side small entries before the small-call
#   work (AB_SMALL_COMMIT) and now: one bench_small_cost binary (this build's)
#   over the old runtime and this one (SYMM_RUNTIME), calls per batch 100.
# Rounds alternate old/new; each program prints its own medians.
set -u
AB_LS_COMMIT=${AB_LS_COMMIT:-72ebf3c^}
AB_SMALL_COMMIT=${AB_SMALL_COMMIT:-30e003d}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AB="$ROOT/.ab"
cmd=${1:-}

case "$cmd" in
prepare)
  rm -rf "$AB"; mkdir -p "$AB/ls" "$AB/small"
  git -C "$ROOT" archive "$AB_LS_COMMIT" include tests/perf tests/common | tar -x -C "$AB/ls"
  git -C "$ROOT" archive "$AB_SMALL_COMMIT" | tar -x -C "$AB/small"
  echo "ls $(git -C "$ROOT" rev-parse --short "$AB_LS_COMMIT")" > "$AB/commits"
  echo "small $(git -C "$ROOT" rev-parse --short "$AB_SMALL_COMMIT")" >> "$AB/commits"
  du -sh "$AB"
  ;;
build)
  # the old runtime for "small": configured like BUILD, only the runtime target
  BUILD=$2
  [ -d "$AB/small" ] || { echo "gpu-ab: no $AB/small (run prepare where git is)"; exit 1; }
  archs=${GPU_ARCHS:-90}
  cd "$AB/small" || exit 1
  rm -f "$ROOT/build-absmall.log"
  { [ -f "$ROOT/build-absmall/build.ninja" ] || meson setup "$ROOT/build-absmall" -Dwerror=false \
      -Dgpu_archs="$archs" -Dcuda=enabled -Dbindings=disabled > "$ROOT/build-absmall.log.tmp" 2>&1; } &&
    ninja -C "$ROOT/build-absmall" $(ninja -C "$ROOT/build-absmall" -t targets all | cut -d: -f1 |
      grep -E '^runtime/libsymm_runtime\.so\.[0-9.]+$') >> "$ROOT/build-absmall.log.tmp" 2>&1
  echo "exit $?" >> "$ROOT/build-absmall.log.tmp"
  mv "$ROOT/build-absmall.log.tmp" "$ROOT/build-absmall.log"
  ;;
run)
  BUILD=$2; OUT=$3; ROUNDS=${4:-3}
  NV="nvcc -O2 -std=c++17 -arch=sm_${GPU_ARCHS:-90} -Xlinker $(ls "$BUILD"/loader/libsymm.so.1) \
      -Xlinker -rpath,$BUILD/loader"
  RT=$(ls "$BUILD"/runtime/libsymm_runtime.so.1)
  {
    echo "== before/after, $(date -u '+%Y-%m-%d %H:%M UTC'), $(cat "$AB/commits" | paste -sd' ')"
    echo "== ls: bench_symm BENCH_SECTIONS=dev,pp, old header vs this one, this runtime"
    ok=1
    # both compiles at once (each is one nvcc of a few tens of seconds)
    $NV -I"$AB/ls/include" -I"$AB/ls/tests/common" "$AB/ls/tests/perf/bench_symm.cu" \
      -o "$AB/bench_symm_old" -lcuda & p_old=$!
    $NV -I"$ROOT/include" -I"$ROOT/tests/common" "$ROOT/tests/perf/bench_symm.cu" \
      -o "$AB/bench_symm_new" -lcuda & p_new=$!
    wait $p_old || ok=0
    wait $p_new || ok=0
    if [ $ok = 1 ]; then
      for r in $(seq 1 "$ROUNDS"); do
        for w in old new; do
          echo "-- round $r $w"
          BENCH_SECTIONS=dev,pp SYMM_RUNTIME=$RT timeout -k 5 120 "$BUILD/runtime/symmrun" -n 2 \
            --timeout 110 "$AB/bench_symm_$w" 2>&1 | grep -vE '^\[symm\]'
        done
      done
    else
      echo "ls: the benchmarks did not compile"
    fi
    echo "== small: bench_small_cost 1 100, SYMM_BACKEND=cuda, old runtime vs this one"
    for i in $(seq 1 90); do grep -q '^exit' "$ROOT/build-absmall.log" 2>/dev/null && break; sleep 2; done
    OLD_RT=$(ls "$ROOT"/build-absmall/runtime/libsymm_runtime.so.1 2>/dev/null)
    if [ -z "$OLD_RT" ] || [ ! -x "$BUILD/tests/perf/bench_small_cost" ]; then
      echo "small: not run (old runtime: ${OLD_RT:-missing}; build-small.log tail:)"
      tail -5 "$ROOT/build-absmall.log" 2>/dev/null
    else
      for r in $(seq 1 "$ROUNDS"); do
        for w in old new; do
          rt=$([ $w = old ] && echo "$OLD_RT" || echo "$RT")
          echo "-- round $r $w"
          SYMM_BACKEND=cuda SYMM_RUNTIME=$rt timeout -k 5 120 "$BUILD/runtime/symmrun" -n 2 \
            --timeout 110 "$BUILD/tests/perf/bench_small_cost" 1 100 2>&1 | grep -E '^cost|rror'
        done
      done
    fi
  } > "$OUT/ab.txt" 2>&1
  ;;
*)
  echo "usage: gpu-ab.sh prepare | build BUILD | run BUILD OUT [ROUNDS]" >&2; exit 2 ;;
esac
