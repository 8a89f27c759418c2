#!/usr/bin/env bash
# Build and run the unit, mp (host backend; with the remote cases over tcp),
# bootstrap, loader and transport suites under sanitizers, each variant in
# its own build directory:
#   bash scripts/sanitize.sh asan        # ASan + UBSan, gcc   (build-asan)
#   bash scripts/sanitize.sh asan-clang  # ASan + UBSan, clang (build-asan-clang)
#   bash scripts/sanitize.sh tsan        # TSan, clang         (build-tsan)
#   bash scripts/sanitize.sh all         # the three in turn
# Extra arguments go to `meson test` (e.g. a test name). Only the targets
# those suites need are built. Any sanitizer report fails the test that
# printed it (halt_on_error; LeakSanitizer on for the ASan variants).
# SYMM_SAN_SUITES overrides the suites ("unit mp bootstrap loader transport";
# "remote transport" for the multi-host cases alone).
set -u
cd "$(dirname "$0")/.."
variant=${1:-asan}
shift || true
if [ "$variant" = all ]; then
  rc=0
  for v in asan asan-clang tsan; do bash "$0" "$v" "$@" || rc=1; done
  exit $rc
fi
case "$variant" in
  asan)       cc=gcc;   san=address,undefined ;;
  asan-clang) cc=clang; san=address,undefined ;;
  tsan)       cc=clang; san=thread ;;
  *) echo "usage: $0 [asan|asan-clang|tsan|all] [meson test args]" >&2; exit 2 ;;
esac
if ! command -v "$cc" >/dev/null; then
  echo "sanitize: $cc is not installed; cannot build the $variant variant" >&2
  exit 1
fi
dir=${SYMM_SAN_BUILD_DIR:-build-$variant}
suites=${SYMM_SAN_SUITES:-unit mp bootstrap loader transport}

if [ ! -f "$dir/build.ninja" ]; then
  # Warnings are the plain build's job (-Dwerror there); sanitizer
  # instrumentation makes gcc warn about code it cannot see through.
  log=$(mktemp)
  CC=$cc meson setup "$dir" -Dcuda=disabled -Dibverbs=disabled -Dbindings=disabled \
    -Dfuzz=disabled -Dbuildtype=debugoptimized -Db_sanitize="$san" -Db_lundef=false \
    -Dwerror=false >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
  rm -f "$log"
fi

# The targets the chosen suites run (and what those depend on).
targets=$(python3 - "$dir" $suites <<'PY'
import json, os, subprocess, sys
d, suites = sys.argv[1], set(sys.argv[2:])
tests = json.loads(subprocess.check_output(["meson", "introspect", d, "--tests"]))
tgts = {t["id"]: t for t in json.loads(subprocess.check_output(["meson", "introspect", d, "--targets"]))}
want = set()
for t in tests:
    if suites & {s.split(":")[-1] for s in t["suite"]}:
        want.update(t.get("depends", []))
        for a in t["cmd"]:
            for tid, tg in tgts.items():
                if a in tg["filename"]:
                    want.add(tid)
# The runtime and the transport plugins are opened at run time (SYMM_RUNTIME,
# dlopen), so no test names them: a suite of only multi-host cases needs
# them built too.
for tid, tg in tgts.items():
    if tg["name"] == "symm_runtime" or tg["name"].startswith("symm_transport_"):
        want.add(tid)
out = set()
for tid in want:
    tg = tgts.get(tid)
    if tg:
        for f in tg["filename"]:
            out.add(os.path.relpath(f, os.path.abspath(d)))
print(" ".join(sorted(out)))
PY
) || exit 1
echo "sanitize ($variant): building $(echo $targets | wc -w) targets in $dir"
ninja -C "$dir" $targets || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}
args=()
for s in $suites; do args+=(--suite "$s"); done
start=$SECONDS
meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "${SYMM_TEST_JOBS:-2}" \
  --timeout-multiplier "${SYMM_SAN_TIMEOUT_MULT:-4}" "${args[@]}" "$@"
rc=$?
echo "sanitize ($variant): meson test exit $rc after $((SECONDS - start)) s"
exit $rc
