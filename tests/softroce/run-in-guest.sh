#!/usr/bin/env bash
# Run many test commands in one Soft-RoCE guest boot (boots cost 15-30 s):
#   scripts/softroce/guest-run.sh -- tests/softroce/run-in-guest.sh [options] [CMD]...
# options:
#   -f FILE        also run every command line of FILE (one per line; blank
#                  lines and lines starting with '#' are skipped)
#   --timeout SEC  per-command limit (default 300); a command past it fails
# Each CMD is one shell command line (bash -c), run from the current directory
# in the order given. Exit status 0 is a pass, 77 a skip, anything else a
# failure. Prints each command's output, a PASS/SKIP/FAIL line per command and
# a final "N passed, N failed, N skipped" line; exits 1 when any failed (or
# nothing was given), 77 when all were skipped, else 0.
set -u
per_timeout=300
cmds=()
while [ $# -gt 0 ]; do
  case $1 in
    -f) [ $# -ge 2 ] || { echo "run-in-guest: -f needs a file" >&2; exit 2; }
        [ -r "$2" ] || { echo "run-in-guest: cannot read $2" >&2; exit 2; }
        while IFS= read -r line || [ -n "$line" ]; do
          case $line in ''|'#'*) continue ;; esac
          cmds+=("$line")
        done <"$2"
        shift 2 ;;
    --timeout) per_timeout=$2; shift 2 ;;
    --) shift; cmds+=("$@"); break ;;
    *) cmds+=("$1"); shift ;;
  esac
done
if [ "${SYMM_SOFTROCE:-}" != 1 ]; then
  echo "run-in-guest: note: SYMM_SOFTROCE is not 1: not inside the Soft-RoCE guest"
fi
if [ ${#cmds[@]} -eq 0 ]; then
  echo "run-in-guest: no commands given"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi
pass=0 failn=0 skip=0 failed=()
for c in "${cmds[@]}"; do
  echo "=== $c"
  t0=$SECONDS
  timeout --kill-after=10 "$per_timeout" bash -c "$c" </dev/null
  rc=$?
  dt=$((SECONDS - t0))
  case $rc in
    0) pass=$((pass + 1)); echo "PASS ($dt s): $c" ;;
    77) skip=$((skip + 1)); echo "SKIP ($dt s): $c" ;;
    124|137) failn=$((failn + 1)); failed+=("$c"); echo "FAIL ($dt s, timed out after $per_timeout s): $c" ;;
    *) failn=$((failn + 1)); failed+=("$c"); echo "FAIL ($dt s, exit $rc): $c" ;;
  esac
done
echo "=== summary"
for c in "${failed[@]+"${failed[@]}"}"; do echo "failed: $c"; done
echo "$pass passed, $failn failed, $skip skipped"
[ $failn -gt 0 ] && exit 1
[ $pass -eq 0 ] && exit 77
exit 0
