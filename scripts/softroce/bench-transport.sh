#!/usr/bin/env bash
# symm's ibverbs transport beside perftest on the same rxe device in the same
# guest boot (run it inside the Soft-RoCE guest):
#   scripts/softroce/guest-run.sh -- scripts/softroce/bench-transport.sh [BUILD_DIR] [--quick]
# Runs perftest-anchor.sh and tests/perf/bench_transport (2 PEs, 2 simulated
# hosts) alternately, --repeat times each (default 3; --quick: 1 round with
# fewer bytes and iterations, for CI), then prints one table: symm, anchor,
# ratio, target (bandwidth >= 0.9x ib_write_bw at 64 KiB+; latency <= 1.2x
# ib_read_lat / ib_atomic_lat; each figure the median over the rounds).
# Exits non-zero when a tool fails; missing a target is reported, not fatal
# (the figures swing with the host's load), unless --check is given.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$top/build-test
rounds=3 bw_bytes=$((16 << 20)) lat_iters=1000 check=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) rounds=1; bw_bytes=$((4 << 20)); lat_iters=300; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --check) check=1; shift ;;
    -*) echo "bench-transport: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
bench=$build/tests/transport/bench_transport
plugin=$build/runtime/libsymm_transport_ibverbs.so
[ -x "$bench" ] || { echo "bench-transport: FAIL: $bench not built" >&2; exit 1; }
[ -f "$plugin" ] || { echo "bench-transport: FAIL: $plugin not built (libibverbs-dev missing at build time?)" >&2; exit 1; }
sizes="65536 262144 1048576"
out=$(mktemp)
for r in $(seq "$rounds"); do
  bash "$here/perftest-anchor.sh" --sizes "$sizes" --bw-bytes "$bw_bytes" --lat-iters "$lat_iters" --repeat 1 >>"$out" ||
    { echo "bench-transport: FAIL: perftest anchor (round $r)" >&2; exit 1; }
  "$bench" "$plugin" --sizes "$sizes" --bw-bytes "$bw_bytes" --lat-iters "$lat_iters" --repeat 1 >>"$out" ||
    { echo "bench-transport: FAIL: bench_transport (round $r)" >&2; exit 1; }
done
grep -E '^(anchor|symm) ' "$out" | sed 's/^/raw: /'
python3 - "$out" "$check" "$rounds" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 6 and f[0] in ('anchor', 'symm'):
        rows.setdefault((f[0], f[1], f[2], f[4]), []).append(float(f[5]))
med = {k: statistics.median(v) for k, v in rows.items()}
pairs = []
for s in ('65536', '262144', '1048576'):
    pairs.append((f'put bw {s} B (MB/s)', ('symm', 'put_bw', s, 'bw_avg_MBps'),
                  ('anchor', 'ib_write_bw', s, 'bw_avg_MBps'), 'bw'))
pairs += [('put lat 8 B (us)', ('symm', 'put_lat', '8', 't_typical_us'),
           ('anchor', 'ib_read_lat', '8', 't_typical_us'), 'lat'),
          ('get lat 8 B (us)', ('symm', 'get_lat', '8', 't_typical_us'),
           ('anchor', 'ib_read_lat', '8', 't_typical_us'), 'lat'),
          ('fetch-add lat (us)', ('symm', 'amo_lat', '8', 't_typical_us'),
           ('anchor', 'ib_atomic_lat', '8', 't_typical_us'), 'lat')]
print(f"# medians of {sys.argv[3]} round(s); anchor: perftest on the same rxe0 in the same boot")
print(f"{'figure':<22} {'symm':>10} {'anchor':>16} {'ratio':>7}  target")
missed = 0
for name, sk, ak, kind in pairs:
    if sk not in med or ak not in med:
        print(f"{name:<22} missing figure"); missed += 1; continue
    s, a = med[sk], med[ak]
    ratio = s / a if a else float('inf')
    ok = ratio >= 0.9 if kind == 'bw' else ratio <= 1.2
    missed += not ok
    print(f"{name:<22} {s:>10.2f} {a:>9.2f} {ak[1]:>6} {ratio:>7.2f}  {'>= 0.9x' if kind == 'bw' else '<= 1.2x'} {'met' if ok else 'MISSED'}")
print(f"bench-transport: {len(pairs) - missed} of {len(pairs)} targets met")
sys.exit(1 if missed and sys.argv[2] == '1' else 0)
PY
