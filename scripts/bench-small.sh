#!/usr/bin/env bash
# Small host-side operations: symm's API (tests/perf/bench_small.c, host
# backend) and Open MPI's OpenSHMEM (bench_small_shmem.c, the same loops),
# 2 PEs on this host, ROUNDS rounds alternating the two, then the medians of
# the rounds' medians side by side with their range. OpenSHMEM is run only
# when oshcc/oshrun are installed (Debian: openmpi-bin libopenmpi-dev).
# Columns: the median over rounds of each round's median, [the rounds' range],
# the within-round spread (median over rounds of p10..p90 of the batches),
# then the ratios to OpenSHMEM (of the medians, [the range of the rounds' own
# ratios]); last, the raw floor of the same rounds (a store to the peer + a
# full fence).
# BASE=another build dir adds its bench_small and runtime to the rotation ("base": a
# before/after comparison in one run).
# BIND=core (default) pins each PE to its own core on both sides, as oshrun
# does by default for 2 ranks (symmrun --bind core); BIND=none pins neither
# (oshrun --bind-to none, symmrun --bind none). Unpinned, the scheduler of
# a loaded machine may run both PEs on one core, and a barrier then costs
# two context switches (~2 us) instead of a cache-line round trip.
#   bash scripts/bench-small.sh [ROUNDS]    (BUILD=build dir, default build-bench)
set -u
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
BUILD=${BUILD:-build-bench}
. scripts/deps.sh
symm_deps >/dev/null || exit 1
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" -Dbuildtype=release -Dcuda=disabled \
  -Dbindings=disabled >/dev/null || exit 1
ninja -C "$BUILD" >/dev/null || exit 1
SHMEM=
if command -v oshcc >/dev/null && command -v oshrun >/dev/null; then
  oshcc -O2 -std=gnu11 -o "$BUILD/bench_small_shmem" tests/perf/bench_small_shmem.c || exit 1
  SHMEM=1
else
  echo "bench-small: oshcc/oshrun not found: symm only (apt-get install openmpi-bin libopenmpi-dev)"
fi
BIND=${BIND:-core}
OSH=(oshrun -np 2 --mca spml ucx --mca osc ucx -x UCX_TLS=posix,sysv,cma,self)
[ "$(id -u)" = 0 ] && OSH+=(--allow-run-as-root)
case "$BIND" in
  core) OSH+=(--bind-to core); PIN=(--bind core) ;;
  none) OSH+=(--bind-to none); PIN=(--bind none) ;;
  *) echo "bench-small: BIND=core or none" >&2; exit 2 ;;
esac
out=$(mktemp)
for r in $(seq "$ROUNDS"); do
  "$BUILD/runtime/symmrun" "${PIN[@]}" -n 2 "$BUILD/tests/perf/bench_small" 1 >>"$out" || exit 1
  if [ -n "${BASE:-}" ]; then
    SYMM_RUNTIME="$BASE/runtime/libsymm_runtime.so.1" "$BUILD/runtime/symmrun" "${PIN[@]}" -n 2 \
      "$BASE/tests/perf/bench_small" 1 | sed -e 's/^small symm /small base /' -e 's/^small floor /small floor_base /' >>"$out" || exit 1
  fi
  if [ -n "$SHMEM" ]; then
    "${OSH[@]}" "$BUILD/bench_small_shmem" 1 2>/dev/null | grep '^small ' >>"$out" || exit 1
  fi
done
echo "machine: $(nproc) cores, $(uname -m); load: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds, alternating; BIND=$BIND; ns per call"
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if not f or f[0] != 'small':
        continue
    impl = {'floor': 'symm', 'floor_base': 'base', 'floor_shmem': 'oshmem'}.get(f[1], f[1])
    rows.setdefault((f[2], int(f[3])), {}).setdefault(impl, []).append(
        (float(f[4]), float(f[5]), float(f[6])))
impls = [i for i in ('symm', 'base', 'oshmem') if any(i in by for by in rows.values())]
floor = {i: statistics.median(v[0] for v in rows[('store_fence', 8)][i])
         for i in impls if ('store_fence', 8) in rows and i in rows[('store_fence', 8)]}
def cell(v):
    if not v:
        return '%34s' % '-'
    med = statistics.median(x[0] for x in v)
    return '%7.1f [%6.1f,%6.1f] (%5.1f..%5.1f)' % (
        med, min(x[0] for x in v), max(x[0] for x in v),
        statistics.median(x[1] for x in v), statistics.median(x[2] for x in v))
print('%-14s %6s  ' % ('op', 'bytes') + '  '.join('%-34s' % (i + ' median [range] (p10..p90)')
                                          for i in impls) + '  ratios')
for (op, b), by in sorted(rows.items()):
    line = '%-14s %6d  ' % (op, b) + '  '.join(cell(by.get(i)) for i in impls)
    ref = by.get('oshmem')
    for i in impls:
        if i != 'oshmem' and by.get(i) and ref:
            # and the range of the per-round ratios (the sides of one round
            # ran back to back, under the same load)
            per = [a[0] / b[0] for a, b in zip(by[i], ref)]
            line += '  %s/oshmem %.2f [%.2f,%.2f]' % (
                i, statistics.median(x[0] for x in by[i]) / statistics.median(x[0] for x in ref),
                min(per), max(per))
    if 'symm' in by and 'base' in by:
        line += '  symm/base %.2f' % (statistics.median(x[0] for x in by['symm']) /
                                       statistics.median(x[0] for x in by['base']))
    print(line)
print('floor (store to the peer + fence, same rounds): ' +
      ', '.join('%s %.1f ns' % (i, v) for i, v in floor.items()))
PY
rm -f "$out"
