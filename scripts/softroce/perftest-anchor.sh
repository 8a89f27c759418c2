#!/usr/bin/env bash
# The peer anchor: what raw verbs reach on the guest's rxe device, measured
# with perftest between two processes of the same guest (run it inside the
# Soft-RoCE guest, e.g. scripts/softroce/guest-run.sh -- scripts/softroce/perftest-anchor.sh).
#   perftest-anchor.sh [--sizes "65536 1048576"] [--bw-bytes B] [--lat-iters N] [--repeat N]
# Prints one parseable row per figure, each starting with "anchor":
#   anchor <tool> <bytes> <iters> <metric> <value>
# metrics: bw_avg_MBps (ib_write_bw "BW average", MB/s = 2^20 B/s), t_typical_us
# (median latency) and t_avg_us (ib_read_lat, ib_atomic_lat). With --repeat N each
# figure is the median of N runs; ib_write_bw moves about --bw-bytes (default
# 16 MiB) per size, at least 20 messages. Exits non-zero when a tool fails or prints nothing
# parseable. Iteration counts are small: TCG runs everything ~100x slower than hardware.
set -u -o pipefail
. "$(dirname "$0")/rxe.sh"
dev=${SYMM_SOFTROCE_DEV:-rxe0}
sizes="65536 1048576"
bw_bytes=$((16 << 20))
lat_iters=1000
repeat=1
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --bw-bytes) bw_bytes=$2; shift 2 ;;
    --lat-iters) lat_iters=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "perftest-anchor: unknown option '$1'" >&2; exit 2 ;;
  esac
done
fail() { echo "perftest-anchor: FAIL: $*" >&2; exit 1; }
for t in ib_write_bw ib_read_lat ib_atomic_lat; do
  command -v $t >/dev/null || fail "$t not found (package perftest)"
done
[ "$(rxe_port_state "$dev")" = "4: ACTIVE" ] || fail "$dev port 1 is not ACTIVE"
gidx=$(rxe_gid_index "$dev") || fail "$dev has no IPv4-mapped RoCE v2 GID"
ip=$(rxe_gid_ipv4 "$dev" "$gidx")
port=18600

# run_pair TOOL ARGS...: server and client of one perftest tool; prints the
# client's output. The server may need a moment before it listens.
run_pair() {
  local tool=$1; shift
  port=$((port + 1))
  "$tool" -d "$dev" -x "$gidx" -p $port -F "$@" >/tmp/anchor-server.log 2>&1 &
  local srv=$! out rc try
  for try in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.5
    out=$(timeout 120 "$tool" -d "$dev" -x "$gidx" -p $port -F "$@" "$ip" 2>&1); rc=$?
    [ $rc = 0 ] && break
    case $out in *"Couldn't connect"*|*"Unable to open file descriptor for socket connection"*) continue ;; esac
    break
  done
  timeout 60 tail --pid=$srv -f /dev/null
  kill $srv 2>/dev/null; wait $srv 2>/dev/null
  if [ $rc != 0 ]; then
    echo "perftest-anchor: $tool $* failed ($rc):" >&2
    echo "$out" | tail -n 15 >&2
    tail -n 5 /tmp/anchor-server.log >&2
    return 1
  fi
  printf '%s\n' "$out"
}

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The data row of perftest's result table starts with the byte count.
data_row() { awk -v b="$1" '$1 == b && $2 ~ /^[0-9]+$/ { print; exit }'; }

echo "# perftest anchor on $dev, GID index $gidx ($ip), repeat $repeat"
printf '%-7s %-14s %9s %6s %-13s %s\n' "#" tool bytes iters metric value
rows=0
for s in $sizes; do
  bw_iters=$((bw_bytes / s)); [ $bw_iters -ge 20 ] || bw_iters=20
  vals=
  for r in $(seq "$repeat"); do
    out=$(run_pair ib_write_bw -s "$s" -n "$bw_iters") || fail "ib_write_bw -s $s"
    row=$(echo "$out" | data_row "$s")
    [ -n "$row" ] || { echo "$out" >&2; fail "no result row in ib_write_bw -s $s output"; }
    vals+="$(echo "$row" | awk '{ print $4 }')"$'\n'   # bytes iters peak average msgrate
  done
  printf '%-7s %-14s %9s %6s %-13s %s\n' anchor ib_write_bw "$s" "$bw_iters" bw_avg_MBps "$(printf %s "$vals" | median)"
  rows=$((rows + 1))
done
for tool in ib_read_lat ib_atomic_lat; do
  typ= avg=
  for r in $(seq "$repeat"); do
    if [ $tool = ib_read_lat ]; then
      out=$(run_pair $tool -s 8 -n "$lat_iters") || fail "$tool"
    else
      out=$(run_pair $tool -n "$lat_iters") || fail "$tool"
    fi
    row=$(echo "$out" | data_row 8)
    [ -n "$row" ] || { echo "$out" >&2; fail "no result row in $tool output"; }
    # bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9
    typ+="$(echo "$row" | awk '{ print $5 }')"$'\n'
    avg+="$(echo "$row" | awk '{ print $6 }')"$'\n'
  done
  printf '%-7s %-14s %9s %6s %-13s %s\n' anchor $tool 8 "$lat_iters" t_typical_us "$(printf %s "$typ" | median)"
  printf '%-7s %-14s %9s %6s %-13s %s\n' anchor $tool 8 "$lat_iters" t_avg_us "$(printf %s "$avg" | median)"
  rows=$((rows + 2))
done
echo "perftest-anchor: $rows figures"
