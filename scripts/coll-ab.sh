#!/usr/bin/env bash
# A/B of the CUDA collectives under several settings, one after another on the
# same machine and build (scripts/gpu-suite.sh builds build-gpu; PHASES=none
# builds only). Each configuration is a label and environment settings:
#
#   AB_CFGS="auto;ll128 SYMM_CUDA_COLL_ALGO=ll128;twoshot SYMM_CUDA_COLL_ALGO=twoshot" \
#     AB_NP=4 AB_SIZES=262144,1048576 bash scripts/coll-ab.sh
#
# C (default): tests/perf/bench_coll_stream --ops AB_OPS --sizes AB_SIZES on
# AB_NP PEs, then AB_ARGS (e.g. "--calls 200 --no-align --skew-us 3000": a
# late peer, the polling-storm check). AB_TORCH=1: tests/perf/bench_coll.py through torch.distributed.run
# (AB_NP ranks, --ops AB_OPS, --max-bytes AB_MAX_BYTES, then AB_TORCH_ARGS,
# e.g. "--impls symm": it runs NCCL and SymmetricMemory beside symm unless
# told otherwise). Rows go to AB_OUT (default $OUT/ab.txt) and
# stdout; a configuration starts only while AB_LIMIT seconds (300) are left.
# NVLink multicast stays off.
set -u
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build-gpu
O=${AB_OUT:-${OUT:-/tmp}/ab.txt}
T0=$SECONDS
LIMIT=${AB_LIMIT:-300}
SIZES=${AB_SIZES:-262144,1048576,4194304,16777216,268435456}
OPS=${AB_OPS:-all_reduce,all_reduce_oop,reduce_scatter}
NP=${AB_NP:-2}
if [ "${AB_TORCH:-0}" = 1 ]; then what="bench_coll.py, $NP ranks, ops $OPS, up to ${AB_MAX_BYTES:-2097152} bytes"
else what="bench_coll_stream, $NP PEs, f32 sum, ops $OPS, sizes $SIZES ${AB_ARGS:-}"; fi
echo "# $what; $(date -u); $(nvidia-smi -L 2>/dev/null | head -1)" > "$O"
run() { # label env...
  local label=$1; shift
  [ $((SECONDS - T0)) -gt "$LIMIT" ] && { echo "=== $label: skipped (time)" >> "$O"; return; }
  echo "=== $label $*" >> "$O"
  local t=$SECONDS
  if [ "${AB_TORCH:-0}" = 1 ]; then
    env "$@" PYTHONPATH="$ROOT/bindings/python" SYMM_LOADER="$B/loader/libsymm.so.1" \
      SYMM_RUNTIME="$B/runtime/libsymm_runtime.so.1" timeout 150 python3 -m torch.distributed.run \
      --standalone --nproc_per_node="$NP" "$ROOT/tests/perf/bench_coll.py" --ops "$OPS" \
      --max-bytes "${AB_MAX_BYTES:-2097152}" ${AB_TORCH_ARGS:-} 2>&1 |
      grep -E '^\| [a-z_]+ \| [0-9]|rror' >> "$O"
  else
    env "$@" timeout 100 "$B/runtime/symmrun" -n "$NP" --timeout 95 "$B/tests/perf/bench_coll_stream" \
      --ops "$OPS" --sizes "$SIZES" ${AB_ARGS:-} 2>&1 | grep -E '^\| [a-z_]+ \| [0-9]|rror' >> "$O"
  fi
  echo "(rc ${PIPESTATUS[0]} in $((SECONDS - t)) s)" >> "$O"
}
IFS=';' read -ra CFGS <<< "${AB_CFGS:-auto;twoshot SYMM_CUDA_COLL_ALGO=twoshot;staged SYMM_CUDA_COLL_ALGO=staged;ll128 SYMM_CUDA_COLL_ALGO=ll128}"
for c in "${CFGS[@]}"; do
  read -ra w <<< "$c"
  run "${w[@]}"
done
cat "$O"
