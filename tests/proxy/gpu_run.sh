#!/usr/bin/env bash
# The GPU proxy on a lent GPU machine, in one command (docs/GPU-RESULTS.md):
# build the runtime, symmrun, tcp and the proxy's GPU programs, then run
# gpu_proxy ops/dead (2 PEs as 2 simulated hosts on one GPU), its figures
# (gpu_proxy bench), the ring round trip beside the floor, and, with time
# left, the GPU suite's programs with every peer remote (suite gpu-remote).
#   OUT=dir BUDGET_S=300 bash tests/proxy/gpu_run.sh
set -u
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PATH=/usr/local/cuda/bin:$PATH
T0=$SECONDS; BUDGET=${BUDGET_S:-300}; OUT=${OUT:-/tmp/proxy-gpu-out}; mkdir -p "$OUT"
left() { echo $((BUDGET - (SECONDS - T0))); }
log() { echo "[+$((SECONDS - T0))s] $*"; }
B=/tmp/bproxy
command -v meson >/dev/null || python3 -m pip install -q meson ninja
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --oneline; date -u; } | tee "$OUT/env.txt"
meson setup $B -Dwerror=false -Dcuda=enabled -Dbindings=disabled -Dgpu_archs=$CC > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 4; }
T=$(ninja -C $B -t targets all | cut -d: -f1 | grep -E '^(runtime/libsymm_runtime\.so\.[0-9.]+|loader/libsymm\.so\.[0-9.]+|runtime/symmrun|runtime/transports/tcp/libsymm_transport_tcp\.so|tests/gpu/gpu_proxy|tests/proxy/bench_proxy_ring_gpu)$')
ninja -C $B $T >> "$OUT/build.log" 2>&1 || { grep -B2 -A10 -E 'error' "$OUT/build.log" | head -80; exit 5; }
log "built"
cd $B
export SYMM_RUNTIME=$(ls $B/runtime/libsymm_runtime.so.1.*.* | head -1) SYMM_HEAP_CHUNK=1M
timeout $(( $(left) > 200 ? 150 : 90 )) meson test --no-rebuild gpu_proxy_ops_h2 gpu_proxy_dead --print-errorlogs 2>&1 | tee "$OUT/tests.log" | grep -E '^ *[0-9]+/|Ok:|Fail:|FAIL|ok$|PE 0'
log "tests done"
[ "$(left)" -gt 40 ] && SYMM_TRANSPORT=tcp SYMM_HEAP_CAP=512M timeout 60 runtime/symmrun -n 2 --hosts 2 --timeout 55 tests/gpu/gpu_proxy bench 2>&1 | tee "$OUT/bench.txt"
[ "$(left)" -gt 25 ] && timeout 30 tests/proxy/bench_proxy_ring_gpu 20000 --pin 2>&1 | tee "$OUT/ring.txt"
if [ "$(left)" -gt 120 ]; then
  R=$(ninja -C $B -t targets all | cut -d: -f1 | grep -E '^tests/gpu/gpu_(rma|sync|coll|stream|device|register)$')
  timeout $(( $(left) - 50 )) ninja -C $B $R > "$OUT/build2.log" 2>&1 &&
    timeout $(( $(left) - 10 )) meson test --no-rebuild --suite gpu-remote --print-errorlogs > "$OUT/remote.log" 2>&1
  grep -E '^ *[0-9]+/|Ok:|Fail:' "$OUT/remote.log"
fi
log "end"
