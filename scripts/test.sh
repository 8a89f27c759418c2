#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as
# errors, runs every suite (GPU tests report skips without a GPU), then the
# ASan+UBSan run of scripts/sanitize.sh (its result counts too).
#   bash scripts/test.sh [extra meson test args]
set -u
cd "$(dirname "$0")/.."
. scripts/deps.sh
symm_deps || exit 1
BUILD=${SYMM_BUILD_DIR:-build-test}
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dwerror=true -Dbuildtype=debugoptimized || exit 1
fi
ninja -C "$BUILD" || exit 1
start=$SECONDS
meson test -C "$BUILD" --print-errorlogs --num-processes "${SYMM_TEST_JOBS:-2}" \
  --timeout-multiplier "${SYMM_TIMEOUT_MULT:-2}" "$@"
rc=$?
# One plain summary line from meson's log.
python3 - "$BUILD/meson-logs/testlog.json" "$((SECONDS - start))" <<'PY'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    counts[r['result']] = counts.get(r['result'], 0) + 1
ok = counts.get('OK', 0) + counts.get('EXPECTEDFAIL', 0)
bad = sum(v for k, v in counts.items() if k in ('FAIL', 'TIMEOUT', 'ERROR', 'UNEXPECTEDPASS'))
skip = counts.get('SKIP', 0)
print(f"({sys.argv[2]} s)")
print(f"{ok} passed, {bad} failed, {skip} skipped")
PY
# Last: the unit, mp, bootstrap and loader suites once more under ASan+UBSan
# (gcc; scripts/sanitize.sh, its own build directory). The multi-host mp
# cases (suite remote) ran above; they are left out here to keep this
# within a few minutes. It runs with the whole suite only (no extra meson test
# arguments); SYMM_SANITIZE=0 skips it (CI does not).
if [ $# -eq 0 ] && [ "${SYMM_SANITIZE:-1}" != 0 ]; then
  san_start=$SECONDS
  SYMM_SAN_BUILD_DIR=${SYMM_SAN_BUILD_DIR:-build-asan} bash scripts/sanitize.sh asan --no-suite remote \
    >"$BUILD/sanitize-asan.log" 2>&1
  san_rc=$?
  python3 - "${SYMM_SAN_BUILD_DIR:-build-asan}/meson-logs/testlog.json" "$((SECONDS - san_start))" "$san_rc" <<'PY'
import json, sys
counts = {}
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        counts[r['result']] = counts.get(r['result'], 0) + 1
except OSError:
    pass
ok = counts.get('OK', 0)
bad = sum(v for k, v in counts.items() if k in ('FAIL', 'TIMEOUT', 'ERROR', 'UNEXPECTEDPASS'))
print(f"ASan+UBSan (scripts/sanitize.sh asan, {sys.argv[2]} s): {ok} passed, {bad} failed, "
      f"{counts.get('SKIP', 0)} skipped" + ("" if sys.argv[3] == "0" else f"; exit {sys.argv[3]}"))
PY
  if [ $san_rc -ne 0 ]; then
    tail -n 60 "$BUILD/sanitize-asan.log"
    rc=1
  fi
fi
exit $rc
