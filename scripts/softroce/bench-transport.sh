#!/usr/bin/env bash
# symm's ibverbs transport beside perftest on the same rxe device in the same
# guest boot (run it inside the Soft-RoCE guest):
#   scripts/softroce/guest-run.sh -- scripts/softroce/bench-transport.sh [BUILD_DIR]
#       [--rounds N] [--quick] [--check]
# Runs perftest-anchor.sh and tests/perf/bench_transport (2 PEs, 2 simulated
# hosts) alternately, --rounds times each (default 3; --quick: 1 round with
# 300 latency iterations, for CI), then prints one table: symm, anchor,
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
    --quick) rounds=1; lat_iters=300; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --check) check=1; shift ;;
    -*) echo "bench-transport: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
bench=$build/tests/transport/bench_transport
plugin=$build/runtime/transports/ibverbs/libsymm_transport_ibverbs.so
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
# The guest has no python: medians and ratios in awk.
awk -v check="$check" -v rounds="$rounds" '
  function med(key,   n, i, j, t, a) {
    n = cnt[key]; if (n == 0) return "";
    for (i = 1; i <= n; i++) a[i] = val[key, i];
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j-1]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  # perftest sometimes prints 0.00 for a run it could not time: not a figure
  NF == 6 && ($1 == "anchor" || $1 == "symm") && $6 > 0 { k = $1 " " $2 " " $3 " " $5; val[k, ++cnt[k]] = $6 }
  function row(name, sk, ak, kind,   s, a, r, ok) {
    s = med(sk); a = med(ak);
    if (s == "" || a == "" || a == 0) { printf "%-22s missing figure\n", name; missed++; total++; return }
    r = s / a; ok = (kind == "bw") ? (r >= 0.9) : (r <= 1.2);
    split(ak, f, " ");
    printf "%-22s %10.2f %10.2f %-13s %6.2f  %s %s\n", name, s, a, f[2], r, (kind == "bw") ? ">= 0.9x" : "<= 1.2x", ok ? "met" : "MISSED";
    missed += !ok; total++
  }
  END {
    printf "# medians of %d round(s); anchor: perftest on the same rxe device in the same boot\n", rounds
    printf "%-22s %10s %10s %-13s %6s  %s\n", "figure", "symm", "anchor", "(tool)", "ratio", "target"
    n = split("65536 262144 1048576", sz, " ")
    for (i = 1; i <= n; i++)
      row("put bw " sz[i] " B MB/s", "symm put_bw " sz[i] " bw_avg_MBps", "anchor ib_write_bw " sz[i] " bw_avg_MBps", "bw")
    row("put lat 8 B us", "symm put_lat 8 t_typical_us", "anchor ib_read_lat 8 t_typical_us", "lat")
    row("get lat 8 B us", "symm get_lat 8 t_typical_us", "anchor ib_read_lat 8 t_typical_us", "lat")
    row("fetch-add lat us", "symm amo_lat 8 t_typical_us", "anchor ib_atomic_lat 8 t_typical_us", "lat")
    printf "bench-transport: %d of %d targets met\n", total - missed, total
    exit (missed && check == 1) ? 1 : 0
  }' "$out"
rc=$?
rm -f "$out"
exit $rc
