#!/usr/bin/env bash
# Soft-RoCE self-test, run inside the guest (guest-run.sh --self-test):
# rxe0 is ACTIVE, it has an IPv4-mapped RoCE v2 GID, and real verbs traffic
# flows between two processes over it (ibv_rc_pingpong, data checked with -c).
set -u
. "$(dirname "$0")/rxe.sh"
dev=${SYMM_SOFTROCE_DEV:-rxe0}
fail() { echo "self-test: FAIL: $*"; exit 1; }
[ "${SYMM_SOFTROCE:-}" = 1 ] || fail "not inside the Soft-RoCE guest (SYMM_SOFTROCE unset): run it through guest-run.sh --self-test"

state=$(rxe_port_state "$dev")
[ "$state" = "4: ACTIVE" ] || fail "$dev port 1 state is '$state', not ACTIVE"
echo "self-test: $dev port 1 ACTIVE"
ibv_devinfo -d "$dev" | grep -qE 'transport:[[:space:]]+InfiniBand' ||
  fail "ibv_devinfo does not list $dev (is the rxe provider of ibverbs-providers there?)"

gidx=$(rxe_gid_index "$dev") || fail "$dev has no IPv4-mapped RoCE v2 GID"
ip=$(rxe_gid_ipv4 "$dev" "$gidx")
echo "self-test: IPv4-mapped RoCE v2 GID index $gidx ($ip)"

# RC pingpong between two processes, payload validated (-c), 200 iterations.
port=18515
ibv_rc_pingpong -d "$dev" -g "$gidx" -p $port -n 200 -s 4096 -c >/tmp/pp-server.log 2>&1 &
srv=$!
out= crc=1
for try in 1 2 3 4 5 6 7 8 9 10; do
  sleep 0.5
  out=$(timeout 60 ibv_rc_pingpong -d "$dev" -g "$gidx" -p $port -n 200 -s 4096 -c "$ip" 2>&1); crc=$?
  [ $crc = 0 ] && break
  case $out in *"Couldn't connect"*) out=; continue ;; *) break ;; esac
done
timeout 30 tail --pid=$srv -f /dev/null || kill $srv 2>/dev/null   # a stuck server must not hang the test
wait $srv; src=$?
[ -n "$out" ] || { fail "client could not connect to the pingpong server"; }
echo "$out" | sed 's/^/  client: /'
sed 's/^/  server: /' /tmp/pp-server.log
[ $src = 0 ] || fail "ibv_rc_pingpong server exited $src"
[ $crc = 0 ] || fail "ibv_rc_pingpong client exited $crc"
echo "$out" | grep -q '200 iters' || fail "ibv_rc_pingpong client did not complete 200 iterations"
echo "self-test: PASS (rc_pingpong 200 x 4096 B over $dev, GID $gidx)"
