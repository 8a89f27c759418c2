#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as
# errors, runs every suite (GPU tests report skips without a GPU).
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
exit $rc
