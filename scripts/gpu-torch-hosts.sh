#!/usr/bin/env bash
# The PyTorch tests across 2 simulated hosts on one GPU machine, from a
# runtime built elsewhere and carried (no build on the GPU machine: a short
# call). First the stream collectives case alone, traced; if it does not
# pass, the same case with the stream synchronised before every copy to the
# host (does the hang need a host thread waiting inside a copy?), and stop;
# else the whole file in both launch modes (torchrun's environment, the
# unique id through torch.distributed).
#
# On a machine with nvcc (the runtime only, about 36 MB):
#   meson setup build-gpucarry -Dgpu_archs=90 -Dtests=disabled -Dbindings=disabled \
#     -Dfuzz=disabled -Dofi=disabled -Dibverbs=disabled && ninja -C build-gpucarry
# then on the GPU machine, build-gpucarry carried:
#   OUT=/some/dir bash scripts/gpu-torch-hosts.sh build-gpucarry
# Writes OUT/<run>.txt and prints a line per run (exit status, seconds, each
# rank's pass count, failures, the last trace lines of a run that failed and
# the native frames in symm and the driver of every thread of a run that
# hung: tests/tools/stackdump.c, built here, prints them before the limit).
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
B=$(cd "${1:?usage: gpu-torch-hosts.sh BUILD_DIR}" && pwd)
OUT=${OUT:?set OUT to a folder for the logs}
mkdir -p "$OUT"
# the files themselves (a carried symbolic link may not travel)
V=
for f in "$B"/runtime/libsymm_runtime.so.*.*.*; do [ -f "$f" ] && V=${f##*.so.}; done
[ -n "$V" ] || { echo "gpu-torch-hosts.sh: no runtime built in $B"; exit 2; }
T=bindings/python/tests
nvidia-smi -L > "$OUT/gpu.txt" 2>&1
# every thread's native stack shortly before the time limit (no gdb there)
SD=$(mktemp -d)/stackdump.so
cc -shared -fPIC -O1 -o "$SD" tests/tools/stackdump.c -lpthread || SD=
run1() { # tag timeout mode [env assignments...]; SCRIPT: the test file
  local tag=$1 to=$2 mode=$3; shift 3
  local t0=$SECONDS
  env PYTHONPATH="$PWD/bindings/python" SYMM_LOADER="$B/loader/libsymm.so.$V" \
    SYMM_RUNTIME="$B/runtime/libsymm_runtime.so.$V" SYMM_TRANSPORT_PATH="$B/runtime/transports/tcp" \
    CUDA_MODULE_LOADING=EAGER SYMM_TEST_TRACE=1 SYMM_TEST_TRACE_STACKS_S=$((to - 15)) \
    ${SD:+LD_PRELOAD=$SD SYMM_STACKS_S=$((to - 12))} "$@" \
    timeout -k 5 "$to" python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
    "${SCRIPT:-$T/test_torch_gpu.py}" "$mode" > "$OUT/$tag.txt" 2>&1
  local rc=$?
  echo "$tag: exit $rc, $((SECONDS - t0)) s: $(grep -E '^\[rank [0-9]/2[^]]*\] [0-9]+ passed' "$OUT/$tag.txt" | tr '\n' ';')"
  grep -E "FAILED|Timeout \(" "$OUT/$tag.txt" | head -5
  [ $rc = 0 ] || grep "trace:" "$OUT/$tag.txt" | tail -2
  # a hung run: the frames of each thread that sits in the runtime or the driver
  [ $rc = 0 ] || grep -E "^(\[[^]]*\]:?)? *stackdump .*(libsymm|libcuda)" "$OUT/$tag.txt" | head -60
  return $rc
}
if ! run1 collectives_h2 60 env SYMM_TEST_HOSTS=2 PYTEST_ADDOPTS="-k torch_collectives"; then
  sed -E 's/\b([a-z]+)\.cpu\(\)/(S.synchronize() or \1).cpu()/g; s/bool\(/bool(S.synchronize() or /g' \
    "$T/test_torch_gpu.py" > "$T/_synced_copies.py"
  SCRIPT=$T/_synced_copies.py run1 collectives_synced_h2 50 env SYMM_TEST_HOSTS=2 \
    PYTEST_ADDOPTS="-k torch_collectives"
  rm -f "$T/_synced_copies.py"
  exit 1
fi
rc=0
run1 env_h2 130 env SYMM_TEST_HOSTS=2 || rc=1
run1 uid_h2 100 uid SYMM_TEST_HOSTS=2 || rc=1
exit $rc
