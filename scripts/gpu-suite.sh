#!/usr/bin/env bash
# GPU suite: build symm with the CUDA backend, run the 'gpu' test suite and
# the symm / NVSHMEM benchmarks, write everything to $OUT and print a summary.
#
#   OUT=/some/dir bash scripts/gpu-suite.sh        (from the repository root)
#
# Knobs (environment): GPU_ARCHS (default: this machine's compute capability),
# SUITE_BUDGET_S (default 560, for a 600 s command: later phases are skipped
# when it runs out, and the summary says which), PHASES (default all, in this
# order: "tests remote proxy info python bench nvshmem coll cstream probe mp"; a subset runs only
# those, e.g. two commands on one warm machine, the build kept:
# PHASES="tests info python" then PHASES="bench nvshmem coll probe mp"),
# SKIP_MP=1 (skip the tests/mp programs on CUDA), SKIP_NVSHMEM=1, SKIP_PROBE=1,
# REMOTE_TESTS (test names for phase remote instead of suite gpu-remote),
# REMOTE_AGAIN_TESTS (test names phase remote runs again with the environment
# REMOTE_AGAIN_ENV, default CUDA_DEVICE_MAX_CONNECTIONS=32; e.g.
# REMOTE_AGAIN_ENV="CUDA_MODULE_LOADING=EAGER"),
# AB_ROUNDS (phase ab's alternating rounds, default 3),
# SKIP_TARGETS (a regex of build targets to leave out, e.g. tests/gpu/gpu_dcoll),
# OVERSUBSCRIBE=1 (run the 3- and 4-PE suites on fewer GPUs too, time-sliced),
# SKIP_PY=1 (skip the Python/PyTorch tests and bench_torch), SKIP_COLL=1 (skip
# tests/perf/bench_coll.py: symm vs NCCL vs SymmetricMemory collectives),
# COLL_MAX_BYTES (default 1 GiB: bench_coll's largest size), CSTREAM_ARGS
# (arguments of bench_coll_stream, default: every op, the out-of-place
# all-reduce, the device alltoallv's stream form and symm_alltoallv_on_stream
# too, its own sizes up to 256 MiB).
#
# Files in $OUT: summary.md (pass counts, figures, side-by-side table, platform
# probe, GPUs, driver, date, command), env.txt, build.log, test.log,
# bench_symm.txt, bench_nvshmem.txt, probe.txt, bench_symm.json, bench_nvshmem.json
# (scripts/plot-bench.py plot OUT/bench_*.json -o OUT/plots: every figure), symm-info.json,
# python.txt (+ python.log, bench_torch.txt, bench_torch_<ranks>.json),
# bench_coll.txt (+ bench_coll_<ranks>.json), cstream.txt (bench_coll_stream
# on 2 and on all GPUs, + cstream_<ranks>.json), cstream-algos.txt (its
# all-reduce, in place and out of place, and reduce-scatter with
# SYMM_CUDA_COLL_ALGO=twoshot, =staged and =ll128; alltoallv's grid form),
# cstream-late.txt (its
# all-reduce and all-gather graphs with a late peer: --skew-us).
# SUITE_PACK=1 packs them all into $OUT/suite.tgz at the end and leaves only it
# and summary.md loose (for runners that bring back a few files; the device
# tool returns 8).
#
# Safety: NVLink multicast stays off. NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0
# and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are exported for every program; symm
# never calls cuMulticastCreate and uses no multimem/NVLS instruction.
set -u
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
unset CUDA_VISIBLE_DEVICES
T0=$SECONDS
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/gpu-suite-out}"
mkdir -p "$OUT"
BUDGET=${SUITE_BUDGET_S:-560}
PHASES=" ${PHASES:-tests remote proxy info python bench nvshmem coll cstream probe ab mp} "
phase() { case "$PHASES" in *" $1 "*) return 0 ;; esac; return 1; }
SKIPPED=""
over() { SKIPPED="$SKIPPED $1"; log "skipped $1: $(left) s of the budget left"; }
BUILD="$ROOT/build-gpu"
export PATH="/usr/local/cuda/bin:$PATH"
left() { echo $((BUDGET - (SECONDS - T0))); }
# a phase's limit: its own cap, but never past the budget (the summary is written last)
cap() { local l=$(( $(left) - 15 )); [ $l -lt 10 ] && l=10; echo $(( $1 < l ? $1 : l )); }
log() { echo "[gpu-suite +$((SECONDS - T0))s] $*"; }

# ---- environment -------------------------------------------------------------
{
  echo "date: $(date -u)"; echo "host: $(hostname)"; echo "command: OUT=$OUT bash scripts/gpu-suite.sh"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null) $(git status --short 2>/dev/null | wc -l) changed files"
  nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap,clocks.sm,clocks.max.sm,memory.total --format=csv
  nvcc --version | tail -2; uname -r; nproc
  grep -n -E 'CU_STREAM_MEM_OP_ATOMIC_REDUCTION|CU_STREAM_ATOMIC_REDUCTION|CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OP' /usr/local/cuda/include/cuda.h | head -20
  env | grep -E '^(NVSHMEM|NCCL|CUDA|TORCH_SYMM|SYMM)' | sort
} > "$OUT/env.txt" 2>&1
GPU_LINE=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
GPU_CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
ARCHS=${GPU_ARCHS:-${GPU_CC:-90}}
log "GPUs: $NGPU x $GPU_LINE; archs $ARCHS"

# ---- meson -------------------------------------------------------------------
if ! command -v meson >/dev/null 2>&1; then
  python3 -m pip install -q meson ninja >/dev/null 2>&1 || true
  export PATH="$HOME/.local/bin:$PATH"
fi
MESON="meson"
command -v meson >/dev/null 2>&1 || MESON="python3 -m mesonbuild.mesonmain"

# ---- build -------------------------------------------------------------------
# Only what this suite runs (the rest of the tree may be mid-change): the
# runtime, loader, launcher, GPU tests and bench; then, allowed to fail, the
# tests/mp programs of suite gpu-mp.
BUILD_OK=0
# phase ab (scripts/gpu-ab.sh): the old runtime builds beside this one
if phase ab && [ -d "$ROOT/.ab/small" ]; then
  GPU_ARCHS=$ARCHS bash scripts/gpu-ab.sh build "$BUILD" > /dev/null 2>&1 &
fi
{
  if [ ! -f "$BUILD/build.ninja" ]; then
    # warnings are not errors here: this machine's compiler is newer than CI's, and a
    # warning must not cost a GPU run (CI builds with -Dwerror=true)
    $MESON setup "$BUILD" -Dwerror=false -Dgpu_archs="$ARCHS" -Dcuda=enabled
  fi
  targets=$(ninja -C "$BUILD" -t targets all | cut -d: -f1 |
    grep -E '^(runtime/libsymm_runtime\.so\.[0-9.]+|loader/libsymm\.so\.[0-9.]+|runtime/symmrun|runtime/symm-info|runtime/transports/[a-z]+/libsymm_transport_[a-z]+\.so|tests/gpu/[a-z_]+|tests/proxy/bench_proxy_ring_gpu|tests/mp/fault/fault_(transport_init|dead_ops)|tests/perf/(bench_symm|bench_small_cost|bench_coll_stream|probe_cuda|probe_timeslice))$')
  # SKIP_TARGETS: a regex of targets left out (a short run's budget)
  [ -n "${SKIP_TARGETS:-}" ] && targets=$(echo "$targets" | grep -vE "$SKIP_TARGETS")
  echo "targets: $targets"
  ninja -C "$BUILD" $targets
} > "$OUT/build.log" 2>&1 && BUILD_OK=1
# (also for phase remote when REMOTE_TESTS names tests/mp programs across hosts, cuda_remote_*)
if [ $BUILD_OK = 1 ] && { phase mp || case "${REMOTE_TESTS:-}" in *cuda_remote*) true ;; *) false ;; esac; }; then
  mp_targets=$(ninja -C "$BUILD" -t targets all | cut -d: -f1 | grep -E '^tests/mp/(core|p2p|teams)/[a-z_0-9]+$')
  timeout -k 5 "$(cap 240)" ninja -C "$BUILD" -k 0 $mp_targets >> "$OUT/build.log" 2>&1 || echo "(some tests/mp programs did not build)" >> "$OUT/build.log"
fi
log "build: $([ $BUILD_OK = 1 ] && echo ok || echo FAILED) ($(grep -c 'error' "$OUT/build.log") error lines, $(grep -c 'warning:' "$OUT/build.log") warnings)"
if [ $BUILD_OK != 1 ]; then tail -40 "$OUT/build.log"; fi

# ---- tests -------------------------------------------------------------------
summ_tests() { grep -E '^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):' "$1" | tr -s ' ' | paste -sd' '; }
: > "$OUT/test.log"
GPU_RES="not run"; MP_RES="not run"
if [ $BUILD_OK = 1 ] && phase tests; then
  log "meson test --suite gpu (own tests)"
  # capped: a hang here must leave the later phases their time, but the
  # tests come first: with little budget left they get it nearly all (the
  # later phases are then skipped and say so), and a cut run says it was cut
  t_lim=$(( $(left) - 60 )); [ $t_lim -lt 120 ] && t_lim=$(( $(left) - 15 ))
  [ $t_lim -lt 30 ] && t_lim=30; [ $t_lim -gt 300 ] && t_lim=300
  timeout -k 5 $t_lim \
    $MESON test -C "$BUILD" --no-rebuild --suite gpu --no-suite gpu-mp --print-errorlogs \
    >> "$OUT/test.log" 2>&1
  t_rc=$?
  GPU_RES=$(summ_tests "$OUT/test.log")
  [ $t_rc = 124 ] || [ $t_rc = 137 ] && GPU_RES="$GPU_RES (cut by the budget after $t_lim s: not every test ran)"
  # 3, 4, 5 and 8 PEs, one GPU per PE (suites gpu-nN): every count this
  # machine has GPUs for, the same programs as above. OVERSUBSCRIBE=1 also
  # runs 3 and 4 PEs where there are fewer GPUs, PEs time-slicing them
  # (SYMM_TEST_OVERSUBSCRIBE=1): slow, and a check of results only.
  for np in 3 4 5 8; do
    shared=""
    if [ "$NGPU" -lt "$np" ]; then
      [ "${OVERSUBSCRIBE:-0}" = 1 ] && [ $np -le 4 ] || break
      shared=", time-sliced"
    fi
    if [ "$(left)" -le 120 ]; then GPU_RES="$GPU_RES; $np PEs: not run (budget)"; over "tests($np PEs)"; continue; fi
    log "meson test --suite gpu-n$np ($np PEs on $NGPU GPUs$shared)"
    echo "===== suite gpu-n$np" >> "$OUT/test.log"
    t_lim=$(( $(left) - 90 )); [ $t_lim -gt 200 ] && t_lim=200
    SYMM_TEST_OVERSUBSCRIBE=$([ -n "$shared" ] && echo 1 || echo 0) timeout -k 5 $t_lim \
      $MESON test -C "$BUILD" --no-rebuild --suite gpu-n$np --print-errorlogs > "$OUT/.multi.log" 2>&1
    GPU_RES="$GPU_RES; $np PEs$shared: $(summ_tests "$OUT/.multi.log")"
    cat "$OUT/.multi.log" >> "$OUT/test.log"; rm -f "$OUT/.multi.log"
  done
  cp "$BUILD/meson-logs/testlog.txt" "$OUT/testlog-gpu.txt" 2>/dev/null
  log "gpu: $GPU_RES"
fi

# ---- symm-info: sees every GPU, their compute capability and peer access -------
INFO_RES="not run"
if [ $BUILD_OK = 1 ] && [ -x "$BUILD/runtime/symm-info" ] && phase info; then
  "$BUILD/runtime/symm-info" --json > "$OUT/symm-info.json" 2>&1
  "$BUILD/runtime/symm-info" >> "$OUT/test.log" 2>&1
  if python3 tests/tools/test_symm_info.py "$BUILD/runtime/symm-info" include/symm/symm.h \
       --expect-gpus "$NGPU" >> "$OUT/test.log" 2>&1; then INFO_RES="ok ($NGPU GPUs)"; else INFO_RES="FAILED (test.log)"; fi
  log "symm-info: $INFO_RES"
fi

SYMM_RESULTS=$OUT/.symm_results; NV_RESULTS=$OUT/.nv_results
rm -f "$SYMM_RESULTS" "$NV_RESULTS"

# ---- Python package with PyTorch: pip install, torch tests, bench_torch ---------
: > "$OUT/python.txt"
# (before the benchmarks, so a short run still records the Python figures;
# gpu_test.sh makes its own C reduce figures when bench_symm has not run yet)
if [ $BUILD_OK = 1 ] && [ "${SKIP_PY:-0}" != 1 ] && phase python; then
  if [ "$(left)" -gt 150 ]; then
    log "python (bindings/python/gpu_test.sh)"
    py_limit=$(( $(left) - 40 )); [ $py_limit -gt 480 ] && py_limit=480
    timeout -k 5 $py_limit bash bindings/python/gpu_test.sh "$BUILD" "$OUT" "$ARCHS" \
      "$SYMM_RESULTS" > "$OUT/python.txt" 2>&1
    rc=$?; [ $rc = 124 ] && echo "python: gpu_test.sh ran past its ${py_limit} s and was stopped" >> "$OUT/python.txt"
    log "$(tail -1 "$OUT/python.txt")"
  else
    over python
  fi
fi


# ---- benchmarks --------------------------------------------------------------
: > "$OUT/bench_symm.txt"; : > "$OUT/bench_nvshmem.txt"
if [ $BUILD_OK = 1 ] && phase bench && [ "$(left)" -le 60 ]; then over bench; fi
if [ $BUILD_OK = 1 ] && phase bench && [ "$(left)" -gt 60 ]; then
  log "bench_symm"
  BENCH_RESULTS=$SYMM_RESULTS BENCH_JSON=$OUT/bench_symm.json timeout -k 5 "$(cap 150)" "$BUILD/runtime/symmrun" -n 2 --timeout 140 \
    "$BUILD/tests/perf/bench_symm" > "$OUT/bench_symm.txt" 2>&1
  echo "exit status $?" >> "$OUT/bench_symm.txt"
fi
if [ "${SKIP_NVSHMEM:-0}" != 1 ] && phase nvshmem && [ "$(left)" -le 60 ]; then over nvshmem; fi
if [ "${SKIP_NVSHMEM:-0}" != 1 ] && phase nvshmem && [ "$(left)" -gt 60 ]; then
  NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem
  if [ ! -f "$NV/include/nvshmem.h" ]; then
    h=$(timeout 30 find / -path '*nvidia/nvshmem/include/nvshmem.h' 2>/dev/null | head -1)
    [ -n "$h" ] && NV=$(dirname "$(dirname "$h")")
  fi
  NVB=/tmp/symm-nvb; mkdir -p $NVB/lnk
  ln -sf "$NV/lib/libnvshmem_host.so.3" $NVB/lnk/libnvshmem_host.so
  log "bench_nvshmem: build against $NV"
  {
    echo "NVSHMEM at $NV"
    timeout -k 5 "$(cap 120)" nvcc -rdc=true -arch=sm_${GPU_CC:-90} -O2 -std=c++17 -I"$NV/include" -Itests/perf tests/perf/bench_nvshmem.cu \
      -o $NVB/bench_nvshmem -L"$NV/lib" -L$NVB/lnk -lnvshmem_device -lnvshmem_host -Xlinker -rpath,"$NV/lib"
  } > "$OUT/bench_nvshmem.txt" 2>&1
  if [ -x $NVB/bench_nvshmem ]; then
    log "bench_nvshmem: run"
    rm -f $NVB/uid.bin $NVB/uid.bin.tmp
    export LD_LIBRARY_PATH="$NV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    for r in 0 1; do
      env BENCH_RESULTS=$NV_RESULTS BENCH_JSON=$OUT/bench_nvshmem.json NVSHMEM_DISABLE_NCCL=1 NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo \
          NVSHMEM_SYMMETRIC_SIZE=3221225472 BENCH_RANK=$r BENCH_UID_FILE=$NVB/uid.bin \
          timeout -k 5 "$(cap 150)" $NVB/bench_nvshmem > $NVB/r$r.log 2>&1 &
    done
    wait
    { echo "----- rank 0"; cat $NVB/r0.log; echo "----- rank 1"; tail -20 $NVB/r1.log; } >> "$OUT/bench_nvshmem.txt"
  fi
fi

# ---- collectives: symm vs NCCL vs SymmetricMemory (tests/perf/bench_coll.py) ------
: > "$OUT/bench_coll.txt"
if [ $BUILD_OK = 1 ] && [ "${SKIP_COLL:-0}" != 1 ] && phase coll && [ "$(left)" -le 120 ]; then over coll; fi
if [ $BUILD_OK = 1 ] && [ "${SKIP_COLL:-0}" != 1 ] && phase coll && [ "$(left)" -gt 120 ]; then
  nps=2; [ "$NGPU" -ge 4 ] && nps="2 4"; [ "$NGPU" -gt 4 ] && nps="$nps $NGPU"
  for np in $nps; do
    [ "$(left)" -gt 120 ] || { over "coll($np ranks)"; break; }
    log "bench_coll, $np ranks"
    echo "command: python3 -m torch.distributed.run --standalone --nproc_per_node=$np tests/perf/bench_coll.py --json bench_coll_$np.json --max-bytes ${COLL_MAX_BYTES:-1073741824}" >> "$OUT/bench_coll.txt"
    PYTHONPATH="$ROOT/bindings/python" SYMM_LOADER="$BUILD/loader/libsymm.so.1" \
      SYMM_RUNTIME="$BUILD/runtime/libsymm_runtime.so.1" \
      timeout -k 5 $(( $(left) - 60 < 600 ? $(left) - 60 : 600 )) python3 -m torch.distributed.run \
      --standalone --nproc_per_node=$np tests/perf/bench_coll.py --json "$OUT/bench_coll_$np.json" \
      --max-bytes "${COLL_MAX_BYTES:-1073741824}" >> "$OUT/bench_coll.txt" 2>&1
    echo "exit status $?" >> "$OUT/bench_coll.txt"
  done
fi

# ---- stream collectives from C: host time per call, GPU time (bench_coll_stream) --
: > "$OUT/cstream.txt"
: > "$OUT/cstream-algos.txt"
: > "$OUT/cstream-late.txt"
CSTREAM_AB_SIZES=262144,1048576,4194304,16777216,67108864,268435456
CSTREAM_AB_OPS=all_reduce,all_reduce_oop,reduce_scatter
CSTREAM_L8_SIZES=262144,1048576,2097152
CSTREAM_ARGS=${CSTREAM_ARGS:---ops all_reduce,all_gather,reduce_scatter,all_to_all,all_reduce_oop,all_to_all_v,all_to_all_v_abi,all_reduce_blocking}
CSTREAM_A2AV_SIZES=8,65536,1048576,16777216,268435456
if [ $BUILD_OK = 1 ] && phase cstream; then
  nps=2; [ "$NGPU" -gt 2 ] && nps="2 $NGPU"
  for np in $nps; do
    [ "$(left)" -gt 60 ] || { over "cstream($np PEs)"; break; }
    log "bench_coll_stream, $np PEs"
    echo "command: symmrun -n $np tests/perf/bench_coll_stream ${CSTREAM_ARGS:-}" >> "$OUT/cstream.txt"
    BENCH_JSON="$OUT/cstream_$np.json" timeout -k 5 "$(cap 120)" "$BUILD/runtime/symmrun" -n "$np" \
      --timeout 110 "$BUILD/tests/perf/bench_coll_stream" ${CSTREAM_ARGS:-} >> "$OUT/cstream.txt" 2>&1
    echo "exit status $?" >> "$OUT/cstream.txt"
    # the reductions with each algorithm forced, so that "auto"'s choices
    # (docs/DECISIONS.md "Choosing the algorithm") are checked against both
    # every run (LL128 only at the sizes its lines hold by default: above, it
    # falls back)
    for algo in twoshot staged ll128; do
      [ "$(left)" -gt 40 ] || { over "cstream algos($np PEs)"; break 2; }
      sizes=$CSTREAM_AB_SIZES; [ $algo = ll128 ] && sizes=$CSTREAM_L8_SIZES
      echo "command: SYMM_CUDA_COLL_ALGO=$algo symmrun -n $np tests/perf/bench_coll_stream --ops $CSTREAM_AB_OPS --sizes $sizes" >> "$OUT/cstream-algos.txt"
      SYMM_CUDA_COLL_ALGO=$algo timeout -k 5 "$(cap 60)" "$BUILD/runtime/symmrun" -n "$np" --timeout 50 \
        "$BUILD/tests/perf/bench_coll_stream" --ops "$CSTREAM_AB_OPS" \
        --sizes "$sizes" >> "$OUT/cstream-algos.txt" 2>&1
      echo "exit status $?" >> "$OUT/cstream-algos.txt"
    done
    # alltoallv's grid form (any forced algorithm but ll), beside auto's LL
    # form in cstream.txt (docs/DECISIONS.md "alltoallv (counts in GPU
    # memory)")
    if [ "$(left)" -gt 40 ]; then
      echo "command: SYMM_CUDA_COLL_ALGO=twoshot symmrun -n $np tests/perf/bench_coll_stream --ops all_to_all_v_abi --sizes $CSTREAM_A2AV_SIZES" >> "$OUT/cstream-algos.txt"
      SYMM_CUDA_COLL_ALGO=twoshot timeout -k 5 "$(cap 60)" "$BUILD/runtime/symmrun" -n "$np" --timeout 50 \
        "$BUILD/tests/perf/bench_coll_stream" --ops all_to_all_v_abi \
        --sizes "$CSTREAM_A2AV_SIZES" >> "$OUT/cstream-algos.txt" 2>&1
      echo "exit status $?" >> "$OUT/cstream-algos.txt"
    fi
    # a late peer: PE 1 starts each graph replay 3 ms after PE 0 (no host
    # barrier between replays, as in PyTorch's loops). Without the LL/LL128
    # waiters' naps this started a polling storm that held whole replays
    # many times slower (docs/DECISIONS.md "One-shot LL"; docs/GPU-RESULTS.md
    # "2026-11-27: the polling storm"); 15 us a call here is the skew itself
    # (3 ms over 200 calls). All-gather too: on 2 PEs it takes LL up to
    # 512 KiB a pair (the 1 MiB row)
    for cfg in "auto" "ll SYMM_CUDA_COLL_ALGO=ll SYMM_CUDA_LL_BYTES=2M"; do
      [ "$(left)" -gt 30 ] || { over "cstream late peer($np PEs)"; break 2; }
      read -ra w <<< "$cfg"
      echo "command: ${w[*]:1} symmrun -n $np tests/perf/bench_coll_stream --ops all_reduce,all_gather --sizes $CSTREAM_L8_SIZES --calls 200 --no-align --skew-us 3000 (${w[0]})" >> "$OUT/cstream-late.txt"
      env "${w[@]:1}" timeout -k 5 "$(cap 40)" "$BUILD/runtime/symmrun" -n "$np" --timeout 35 \
        "$BUILD/tests/perf/bench_coll_stream" --ops all_reduce,all_gather --sizes "$CSTREAM_L8_SIZES" \
        --calls 200 --no-align --skew-us 3000 >> "$OUT/cstream-late.txt" 2>&1
      echo "exit status $?" >> "$OUT/cstream-late.txt"
    done
  done
fi

# ---- platform probe (no symm, no NVSHMEM: what the driver and links allow) ----
: > "$OUT/probe.txt"
if [ $BUILD_OK = 1 ] && [ -x "$BUILD/tests/perf/probe_cuda" ] && [ "${SKIP_PROBE:-0}" != 1 ] && phase probe && [ "$(left)" -le 60 ]; then over probe; fi
if [ $BUILD_OK = 1 ] && [ -x "$BUILD/tests/perf/probe_cuda" ] && [ "${SKIP_PROBE:-0}" != 1 ] && phase probe && [ "$(left)" -gt 60 ]; then
  log "probe_cuda"
  timeout -k 5 "$(cap 120)" "$BUILD/tests/perf/probe_cuda" > "$OUT/probe.txt" 2>&1
  echo "exit status $?" >> "$OUT/probe.txt"
fi

# ---- the tests/mp programs on CUDA (last: they may be slow) --------------------
# Every peer remote: the GPU suite's programs with symmrun --hosts 2 (suite
# gpu-remote; each PE its own simulated host on one GPU, so device and stream
# forms go through the GPU proxy and tcp), the proxy's own tests (gpu_proxy_*)
# and the tests/mp programs across hosts (cuda_remote_*, in suite gpu-mp).
REMOTE_RES="not run"
if [ $BUILD_OK = 1 ] && phase remote && [ "$(left)" -gt 40 ]; then
  log "meson test --suite gpu-remote"
  # (gpu_proxy_* and proxy_gpu_ring are in suite gpu: the tests phase runs them;
  # meson takes a suite and test names as both filters, so one list per call.)
  # REMOTE_TESTS: test names instead of the suite (a short run)
  timeout -k 5 "$(cap 420)" $MESON test -C "$BUILD" --no-rebuild \
    ${REMOTE_TESTS:---suite gpu-remote} --print-errorlogs > "$OUT/remote.log" 2>&1
  REMOTE_RES=$(summ_tests "$OUT/remote.log")
  log "remote: $REMOTE_RES"
  # REMOTE_AGAIN_TESTS: these tests again with REMOTE_AGAIN_ENV (what a hang
  # depends on: CUDA_DEVICE_MAX_CONNECTIONS, CUDA_MODULE_LOADING, GPU_TEST_NO_WARMUP)
  if [ -n "${REMOTE_AGAIN_TESTS:-}" ] && [ "$(left)" -gt 40 ]; then
    again_env=${REMOTE_AGAIN_ENV:-CUDA_DEVICE_MAX_CONNECTIONS=32}
    env $again_env timeout -k 5 "$(cap 300)" $MESON test -C "$BUILD" \
      --no-rebuild $REMOTE_AGAIN_TESTS --print-errorlogs > "$OUT/remote-again.log" 2>&1
    REMOTE_RES="$REMOTE_RES; with $again_env: $(summ_tests "$OUT/remote-again.log")"
    log "remote, $again_env: $(summ_tests "$OUT/remote-again.log")"
  fi
fi
# The proxy's figures (docs/PROXY.md "Figures"): the ring round trip beside the
# machine's floor (a kernel thread and a host thread ping-ponging one pinned
# word), and device put vs host put over tcp between 2 simulated hosts, with the
# proxy's own time split (the INFO line "proxy: ... run ... flushes" at finalize).
PROXY_RES="not run"
if [ $BUILD_OK = 1 ] && phase proxy && [ "$(left)" -gt 60 ]; then
  log "proxy figures: bench_proxy_ring_gpu, gpu_proxy bench"
  {
    echo "===== bench_proxy_ring_gpu 20000 --pin"
    timeout -k 5 "$(cap 60)" "$BUILD/tests/proxy/bench_proxy_ring_gpu" 20000 --pin
    echo "===== probe_timeslice 40 (a process's GPU work while another process holds the GPU)"
    timeout -k 5 "$(cap 120)" "$BUILD/tests/perf/probe_timeslice" 40; echo "(exit $?)"
    echo "===== the same with CUDA_DEVICE_MAX_CONNECTIONS=32 (the qwait column: shared hardware queues?)"
    CUDA_DEVICE_MAX_CONNECTIONS=32 timeout -k 5 "$(cap 90)" "$BUILD/tests/perf/probe_timeslice" 10
    echo "(exit $?)"
    echo "===== symmrun -n 2 --hosts 2 gpu_proxy bench (tcp)"
    SYMM_RUNTIME="$BUILD/runtime/libsymm_runtime.so.1" SYMM_TRANSPORT=tcp \
      SYMM_TRANSPORT_PATH="$BUILD/runtime/transports/tcp" SYMM_HEAP_CAP=512M SYMM_HEAP_CHUNK=1M \
      SYMM_DEBUG=INFO SYMM_DEBUG_SUBSYS=init timeout -k 5 "$(cap 150)" \
      "$BUILD/runtime/symmrun" -n 2 --hosts 2 --timeout 140 "$BUILD/tests/gpu/gpu_proxy" bench 2>&1 |
      awk '!/^\[symm\]/ || / proxy: /'; echo "(exit ${PIPESTATUS[0]})"
  } > "$OUT/proxy-bench.txt" 2>&1
  PROXY_RES=$(grep -E '^round|ratio' "$OUT/proxy-bench.txt" | tail -1)
  log "proxy: $PROXY_RES"
fi
# Before/after figures (scripts/gpu-ab.sh: the device header's load/store path
# before the proxy branch, the CUDA backend's small host entries before the
# small-call work); needs .ab/ from "gpu-ab.sh prepare" (carried).
AB_RES="not run"
if [ $BUILD_OK = 1 ] && phase ab && [ -d "$ROOT/.ab/ls" ] && [ "$(left)" -gt 110 ]; then
  log "before/after (gpu-ab.sh)"
  GPU_ARCHS=$ARCHS timeout -k 5 "$(cap 300)" bash scripts/gpu-ab.sh run "$BUILD" "$OUT" "${AB_ROUNDS:-3}"
  AB_RES="ab.txt ($(grep -c '^-- round' "$OUT/ab.txt" 2>/dev/null) runs)"
  log "ab: $AB_RES"
fi
if [ $BUILD_OK = 1 ] && [ "${SKIP_MP:-0}" != 1 ] && phase mp && [ "$(left)" -le 40 ]; then over mp; fi
if [ $BUILD_OK = 1 ] && [ "${SKIP_MP:-0}" != 1 ] && phase mp && [ "$(left)" -gt 40 ]; then
  log "meson test --suite gpu-mp"
  echo "===== suite gpu-mp" >> "$OUT/test.log"
  timeout -k 5 $(( $(left) - 20 )) \
    $MESON test -C "$BUILD" --no-rebuild --suite gpu-mp --print-errorlogs > "$OUT/.mp.log" 2>&1
  MP_RES=$(summ_tests "$OUT/.mp.log")
  cat "$OUT/.mp.log" >> "$OUT/test.log"; rm -f "$OUT/.mp.log"
  log "gpu-mp: ${MP_RES:-timed out}"
fi

# ---- summary -----------------------------------------------------------------
{
  echo "# GPU suite: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- machine: $NGPU x $GPU_LINE (driver); $(grep -m1 'release' <(nvcc --version))"
  echo "- command: \`OUT=\$OUT bash scripts/gpu-suite.sh\` (GPU_ARCHS=$ARCHS), $((SECONDS - T0)) s"
  echo "- NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE (NVLink multicast off)"
  echo "- build: $([ $BUILD_OK = 1 ] && echo ok || echo FAILED); phases:$PHASES(budget ${BUDGET} s)"
  echo "- skipped for lack of budget:${SKIPPED:- nothing}"
  echo "- tests, suite gpu (own): $GPU_RES"
  echo "- every peer remote (suite gpu-remote, gpu_proxy_*, proxy_gpu_ring): $REMOTE_RES"
  echo "- proxy figures (proxy-bench.txt): $PROXY_RES"
  echo "- before/after: $AB_RES"
  echo "- tests, suite gpu-mp (tests/mp programs with SYMM_TEST_BACKEND=cuda): ${MP_RES:-timed out}"
  echo "- symm-info --json (tests/tools/test_symm_info.py --expect-gpus $NGPU): $INFO_RES"
  echo
  grep -E '^ *[0-9]+/[0-9]+ ' "$OUT/test.log" | sed 's/^/    /'
  echo
  python3 tests/perf/compare.py "$SYMM_RESULTS" "$NV_RESULTS" --title "symm vs NVSHMEM, PE 0 -> PE 1"
  if [ -s "$OUT/python.txt" ]; then
    echo; echo "### Python package with PyTorch (bindings/python/gpu_test.sh)"; echo
    grep '^python:' "$OUT/python.txt" | sed 's/^/- /'
    echo; grep -E '^(\||##|command:|[0-9]+ ranks share)' "$OUT/bench_torch.txt" 2>/dev/null
  fi
  if [ -s "$OUT/bench_coll.txt" ]; then
    echo; echo "### Collectives: symm vs NCCL vs SymmetricMemory (tests/perf/bench_coll.py)"; echo
    grep -E '^(\||##|NOTE|note:|command:|exit status)' "$OUT/bench_coll.txt"
  fi
  if [ -s "$OUT/cstream.txt" ]; then
    echo; echo "### Stream collectives from C (tests/perf/bench_coll_stream.cu)"; echo
    grep -E '^(\||bench_coll_stream|floor|command:|exit status)' "$OUT/cstream.txt"
  fi
  if [ -s "$OUT/cstream-algos.txt" ]; then
    echo; echo "### The reductions with each algorithm forced (bench_coll_stream)"; echo
    grep -E '^(\||bench_coll_stream|command:|exit status)' "$OUT/cstream-algos.txt"
  fi
  if [ -s "$OUT/cstream-late.txt" ]; then
    echo; echo "### All-reduce and all-gather graphs with a late peer (bench_coll_stream --skew-us)"; echo
    grep -E '^(\||bench_coll_stream|command:|exit status)' "$OUT/cstream-late.txt"
  fi
  if [ -s "$OUT/probe.txt" ]; then
    echo; echo "### Platform probe (tests/perf/probe_cuda.cu, no symm)"; echo
    grep '^|' "$OUT/probe.txt"
  fi
} > "$OUT/summary.md" 2>&1
rm -f "$SYMM_RESULTS" "$NV_RESULTS"
# plots need matplotlib (pip; scripts/deps.sh installs it): without it the
# JSON stays and the summary says so
if ls "$OUT"/bench_*.json >/dev/null 2>&1 && ! python3 -c 'import matplotlib' 2>/dev/null; then
  timeout 60 python3 -m pip install -q --retries 0 --timeout 5 matplotlib >/dev/null 2>&1 ||
    echo "(no plots: matplotlib is missing and pip could not install it; plot later with scripts/plot-bench.py)" >> "$OUT/summary.md"
fi
if [ -s "$OUT/bench_symm.json" ] && [ -s "$OUT/bench_nvshmem.json" ]; then
  python3 scripts/plot-bench.py plot "$OUT/bench_symm.json" "$OUT/bench_nvshmem.json" -o "$OUT/plots" > /dev/null 2>&1 ||
    echo "(plot-bench.py failed)" >> "$OUT/summary.md"
fi
# the Python benchmarks' figures (symm vs NCCL vs SymmetricMemory; symm.torch per call)
py_json=$(ls "$OUT"/bench_coll_*.json "$OUT"/bench_torch_*.json 2>/dev/null)
if [ -n "$py_json" ]; then
  # shellcheck disable=SC2086  # one path per word
  python3 scripts/plot-bench.py plot $py_json -o "$OUT/plots" > /dev/null 2>&1 ||
    echo "(plot-bench.py failed on $py_json)" >> "$OUT/summary.md"
fi
cat "$OUT/summary.md"
if [ "${SUITE_PACK:-0}" = 1 ]; then
  pack=$(mktemp /tmp/gpu-suite-pack.XXXXXX) &&
    tar czf "$pack" -C "$OUT" . &&
    find "$OUT" -mindepth 1 -maxdepth 1 ! -name summary.md -exec rm -rf {} + &&
    mv "$pack" "$OUT/suite.tgz" || echo "gpu-suite: SUITE_PACK failed; the files stay loose in $OUT" >&2
fi
