#!/usr/bin/env bash
# tests/mp programs on CUDA across 2 simulated hosts on one GPU machine,
# from a build made elsewhere and carried (a short call: no build there).
#
# On a machine with nvcc (runtime, loader, symmrun, tcp and the programs):
#   meson setup build-gpuv -Dgpu_archs=90 -Dbindings=disabled -Dfuzz=disabled -Dofi=disabled \
#     -Dibverbs=disabled && ninja -C build-gpuv runtime/libsymm_runtime.so.1.3.0 \
#     loader/libsymm.so.1.3.0 runtime/transports/tcp/libsymm_transport_tcp.so runtime/symmrun \
#     tests/mp/p2p/p2p_signal tests/mp/p2p/p2p_random
# then on the GPU machine, build-gpuv carried:
#   OUT=/some/dir bash scripts/gpu-mp-hosts.sh build-gpuv [PROGRAM...]
# PROGRAM: a path under BUILD_DIR/tests/mp (default p2p/p2p_signal p2p/p2p_random);
# NP (default 4: 2 PEs a host, so each PE has peers on both routes) and
# REPEAT (default 3) in the environment. Prints a line a run (and its FAIL
# lines), writes OUT/<program>-n<NP>h2-<run>.txt; exits 1 when a run failed.
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
B=$(cd "${1:?usage: gpu-mp-hosts.sh BUILD_DIR [PROGRAM...]}" && pwd)
shift
OUT=${OUT:?set OUT to a folder for the logs}
mkdir -p "$OUT"
[ $# -gt 0 ] || set -- p2p/p2p_signal p2p/p2p_random
NP=${NP:-4}
# the libraries' links (a carried symbolic link may not travel)
RT=
for f in "$B"/loader/libsymm.so.*.*.* "$B"/runtime/libsymm_runtime.so.*.*.*; do
  [ -f "$f" ] || continue
  ln -sf "$(basename "$f")" "${f%.*.*}"
  ln -sf "$(basename "$f")" "${f%.*.*.*}"
  case "$f" in *runtime.so*) RT=$f ;; esac
done
[ -n "$RT" ] || { echo "gpu-mp-hosts.sh: no runtime built in $B"; exit 2; }
nvidia-smi -L
rc=0
for rep in $(seq 1 "${REPEAT:-3}"); do
  for p in "$@"; do
    log="$OUT/$(basename "$p")-n${NP}h2-$rep.txt"
    SYMM_TEST_BACKEND=cuda SYMM_HEAP_CHUNK=1M SYMM_HEAP_CAP=256M SYMM_TRANSPORT=tcp \
      SYMM_RUNTIME="$RT" SYMM_TRANSPORT_PATH="$B/runtime/transports/tcp" \
      timeout -k 5 100 "$B/runtime/symmrun" -n "$NP" --hosts 2 --timeout 90 "$B/tests/mp/$p" \
      > "$log" 2>&1
    r=$?
    echo "$(basename "$p") n${NP}h2 run $rep: exit $r"
    [ $r = 0 ] || { rc=1; grep -E "^FAIL" "$log" | head -3; }
  done
done
exit $rc
