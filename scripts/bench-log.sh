#!/usr/bin/env bash
# What the diagnostic log costs when it is off: tests/tools/bench_log.c under
# symmrun -n 2 (host backend) against two runtimes built alike (CUDA off),
# one with the log and one with every log line compiled out (-DSYMM_NO_LOG),
# and with SYMM_DEBUG unset / WARN / INFO for the init subsystem only.
#   bash scripts/bench-log.sh [ROUNDS]     (prints a markdown table)
# Each cell is the median over ROUNDS (default 5) job runs of each run's
# median of 7 samples.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
for v in on off; do
  dir=build-bench-log-$v
  if [ ! -f $dir/build.ninja ]; then
    extra=""; [ $v = off ] && extra="-Dc_args=-DSYMM_NO_LOG"
    meson setup $dir -Dbuildtype=release -Dcuda=disabled -Dbindings=disabled $extra > /dev/null
  fi
  ninja -C $dir "runtime/libsymm_runtime.so.$(meson introspect $dir --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')" \
    runtime/symmrun tests/tools/bench_log > /dev/null
done
# Configurations run round-robin (one job each per round), so load from
# other processes falls on all of them alike; 1 PE shows the per-call path
# without scheduling noise, 2 PEs the waits.
CONFIGS=("compiled out (-DSYMM_NO_LOG)|build-bench-log-off|"
         "SYMM_DEBUG unset|build-bench-log-on|"
         "SYMM_DEBUG=WARN|build-bench-log-on|SYMM_DEBUG=WARN"
         "SYMM_DEBUG=INFO SYMM_DEBUG_SUBSYS=init|build-bench-log-on|SYMM_DEBUG=INFO SYMM_DEBUG_SUBSYS=init")
for r in $(seq "$ROUNDS"); do
  for n in 1 2; do
    for c in "${CONFIGS[@]}"; do
      IFS='|' read -r label b envs <<< "$c"
      env -u SYMM_DEBUG -u SYMM_DEBUG_SUBSYS $envs SYMM_RUNTIME="$PWD/$b/runtime/libsymm_runtime.so.1" \
        SYMM_HEAP_CAP=64M "$b/runtime/symmrun" -n $n "$b/tests/tools/bench_log" 2>/dev/null |
        sed -n "s/^BENCH /$label\t$n\t/p"
    done
  done
done | python3 -c '
import sys, re, statistics
rows, cols = {}, []
for l in sys.stdin:
    cfg, n, rest = l.rstrip("\n").split("\t")
    m = re.match(r"(.*): ([0-9.]+) ns/call", rest)
    col = "%s, %s PE%s" % (m.group(1), n, "s" if n != "1" else "")
    if m.group(1) == "symm_barrier_all" and n == "1": continue  # no wait with one PE
    if col not in cols: cols.append(col)
    rows.setdefault(cfg, {}).setdefault(col, []).append(float(m.group(2)))
if not rows: sys.exit("bench-log: no results")
print("| log | " + " | ".join(c + " (ns/call)" for c in cols) + " |")
print("|---|" + "---|" * len(cols))
for cfg, r in rows.items():
    print("| %s | %s |" % (cfg, " | ".join("%.1f" % statistics.median(r[c]) if c in r else "-" for c in cols)))'
echo
echo "$ROUNDS rounds; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
