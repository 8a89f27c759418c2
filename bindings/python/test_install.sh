#!/usr/bin/env bash
# pip-installs the symm package from this checkout into a fresh target
# directory (the in-tree backend runs the project's Meson build and bundles
# the loader, runtime and symmrun), then runs a 2-PE ring from the installed
# copy, using nothing from the build tree, and the missing-runtime fallback.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: test_install.sh MESON_BUILD_DIR}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}
if ! $py -m pip --version >/dev/null 2>&1; then
  echo "FAIL: $py has no pip (apt-get install python3-pip)"; exit 1
fi
# Reuse a wheel build directory next to the test build so reruns are quick.
export SYMM_WHEEL_BUILDDIR="$build/python-wheel-build"
# The CUDA kernels are compiled (and tested) by the main build already; here
# the packaging is under test, so the wheel is built without them to save
# minutes on 2 cores (SYMM_WHEEL_MESON_ARGS overrides).
export SYMM_WHEEL_MESON_ARGS=${SYMM_WHEEL_MESON_ARGS:--Dcuda=disabled}
if ! $py -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
      --target "$tmp/site" "$here" 2>&1 | grep -v "Running pip as the 'root'"; then :; fi
if [ ! -f "$tmp/site/symm/_lib/libsymm_runtime.so.1" ]; then
  echo "FAIL: pip install did not produce symm/_lib/libsymm_runtime.so.1"; exit 1
fi
cat > "$tmp/ring.py" <<'PY'
import sys, symm
with symm.init() as ctx:
    me, n = ctx.my_pe, ctx.n_pes
    b = ctx.alloc("int64", 4)
    b.put(bytes(bytearray([me] * 32)), (me + 1) % n)
    ctx.barrier_all()
    got = bytes(b.get(me, out=bytearray(32)))
    ok = got == bytes(bytearray([(me - 1) % n] * 32))
    path = symm.runtime_path()
    ok = ok and path.startswith(sys.argv[1])
    print("PE %d of %d: %s (runtime %s)" % (me, n, "ok" if ok else "BAD", path))
    b.free()
sys.exit(0 if ok else 1)
PY
passed=0; failed=0
# Nothing from the build tree: no SYMM_RUNTIME/SYMM_LOADER, bundled symmrun.
if env -u SYMM_RUNTIME -u SYMM_LOADER PYTHONPATH="$tmp/site" \
     "$tmp/site/symm/_lib/symmrun" -n 2 --timeout 60 $py "$tmp/ring.py" "$tmp/site/symm/_lib"; then
  passed=$((passed + 1)); echo "PASS installed package runs a 2-PE ring with its own runtime"
else
  failed=$((failed + 1)); echo "FAIL installed package ring"
fi
if env -u SYMM_LOADER SYMM_RUNTIME=/nonexistent PYTHONPATH="$tmp/site" $py -c '
import symm
assert not symm.available()
try:
    symm.init()
except symm.LibraryNotFound as e:
    print("LibraryNotFound:", e.message.splitlines()[0])
'; then
  passed=$((passed + 1)); echo "PASS installed package falls back with the runtime missing"
else
  failed=$((failed + 1)); echo "FAIL installed package fallback"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
