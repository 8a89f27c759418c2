#!/usr/bin/env bash
# Small host-side operations: symm's API (tests/perf/bench_small.c, host
# backend) and Open MPI's OpenSHMEM (bench_small_shmem.c, the same loops),
# 2 PEs on this host, ROUNDS rounds alternating the two, then the medians of
# the rounds' medians side by side with their range. OpenSHMEM is run only
# when oshcc/oshrun are installed (Debian: openmpi-bin libopenmpi-dev).
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
OSH=(oshrun -np 2 --mca spml ucx --mca osc ucx -x UCX_TLS=posix,sysv,cma,self)
[ "$(id -u)" = 0 ] && OSH+=(--allow-run-as-root)
out=$(mktemp)
for r in $(seq "$ROUNDS"); do
  "$BUILD/runtime/symmrun" -n 2 "$BUILD/tests/perf/bench_small" 1 >>"$out" || exit 1
  if [ -n "$SHMEM" ]; then
    "${OSH[@]}" "$BUILD/bench_small_shmem" 1 2>/dev/null | grep '^small ' >>"$out" || exit 1
  fi
done
echo "machine: $(nproc) cores, $(uname -m); $ROUNDS rounds, alternating; ns per call"
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] != 'small':
        continue
    rows.setdefault((f[2], int(f[3])), {}).setdefault(f[1], []).append(float(f[4]))
print('%-14s %6s  %22s  %22s  %6s' % ('op', 'bytes', 'symm median [range]', 'oshmem median [range]', 'ratio'))
for (op, b), by in sorted(rows.items()):
    def cell(name):
        v = by.get(name)
        return (statistics.median(v), min(v), max(v)) if v else None
    s = cell('symm') or cell('floor')
    o = cell('oshmem') or cell('floor_shmem')
    fmt = lambda c: '%8.1f [%6.1f, %6.1f]' % c if c else '%22s' % '-'
    ratio = '%6.2f' % (s[0] / o[0]) if s and o else '     -'
    print('%-14s %6d  %s  %s  %s' % (op, b, fmt(s), fmt(o), ratio))
PY
rm -f "$out"
