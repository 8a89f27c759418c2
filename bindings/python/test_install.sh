#!/usr/bin/env bash
# The Python package as a user gets it: the sdist made from this checkout's
# committed files (meson-python: meson dist), a wheel built from that sdist
# alone (host backend: the CUDA kernels are compiled and tested by the main
# build), the wheel repaired to a manylinux tag (repair_wheel.sh), installed
# into a fresh target directory; then, using nothing from the build tree:
# a 2-PE ring under the bundled symmrun, symm-info, runtime_path() before the
# first call, a C program built against the wheel's header and loader
# (symm.get_include(), symm.get_library_dir(), symm.pc), the fallback.
# Needs meson-python (without it pip fetches it from PyPI: build isolation).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: test_install.sh MESON_BUILD_DIR}
build=$(cd "$build" && pwd) || exit 1
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}
passed=0; failed=0
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
if ! $py -m pip --version >/dev/null 2>&1; then
  echo "FAIL: $py has no pip (apt-get install python3-pip)"; exit 1
fi
pipq() { $py -m pip -q --disable-pip-version-check "$@" 2>&1 | grep -v "Running pip as the 'root'" || true; }
iso=--no-build-isolation
if ! $py -c 'import mesonpy' 2>/dev/null; then
  echo "note: meson-python is not installed for $py; pip's build isolation fetches it from PyPI"
  iso=
fi
t0=$(date +%s)
# sdist: meson dist packs the committed tree (a git checkout is needed)
if (cd "$root" && $py -c 'import mesonpy, sys; print(mesonpy.build_sdist(sys.argv[1]))' "$tmp/dist") \
     > "$tmp/sdist.log" 2>&1; then
  sdist=$(ls "$tmp"/dist/symm-*.tar.gz)
  pass "sdist $(basename "$sdist") ($(($(date +%s) - t0)) s)"
else
  tail -20 "$tmp/sdist.log"; fail "sdist"; echo "$passed passed, $failed failed"; exit 1
fi
t0=$(date +%s)
pipq wheel $iso --no-deps -w "$tmp/wheel" -Csetup-args=-Dcuda=disabled "$sdist"
whl=$(ls "$tmp"/wheel/symm-*.whl 2>/dev/null)
if [ -n "$whl" ]; then pass "wheel from the sdist alone: $(basename "$whl") ($(($(date +%s) - t0)) s)"
else fail "wheel from the sdist"; echo "$passed passed, $failed failed"; exit 1; fi
if rep=$(bash "$here/repair_wheel.sh" "$whl" "$tmp/repaired" 2>"$tmp/repair.log") &&
   case "$rep" in *-py3-none-manylinux_*.whl) true ;; *) false ;; esac; then
  pass "repaired: $(basename "$rep")"; whl=$rep
else
  tail -5 "$tmp/repair.log"; fail "repair_wheel.sh (auditwheel) gave '${rep:-}'"
fi
pipq install --no-deps --no-index --target "$tmp/site" "$whl"
lib=$tmp/site/symm/_lib
for f in libsymm.so.1 libsymm_runtime.so.1 symmrun symm-info pkgconfig/symm.pc symm/libsymm_transport_tcp.so; do
  [ -e "$lib/$f" ] || fail "the installed package has no symm/_lib/$f"
done
[ -e "$tmp/site/symm/include/symm/symm.h" ] || fail "the installed package has no symm/include/symm/symm.h"
cat > "$tmp/ring.py" <<'PY'
import sys, symm
lib = sys.argv[1]
before = symm.runtime_path()  # nothing loaded yet: where the loader will look
with symm.init() as ctx:
    me, n = ctx.my_pe, ctx.n_pes
    b = ctx.alloc("int64", 4)
    b.put(0, bytes(bytearray([me] * 32)), (me + 1) % n)
    ctx.barrier_all()
    got = bytes(b.get(0, bytearray(32), me))
    ok = got == bytes(bytearray([(me - 1) % n] * 32))
    path = symm.runtime_path()
    ok = ok and path.startswith(lib) and before == path and symm.get_library_dir() == lib
    print("PE %d of %d: %s (runtime %s, before init %s)" % (me, n, "ok" if ok else "BAD", path, before))
    b.free()
sys.exit(0 if ok else 1)
PY
if env -u SYMM_RUNTIME -u SYMM_LOADER PYTHONPATH="$tmp/site" \
     "$lib/symmrun" -n 2 --timeout 60 $py "$tmp/ring.py" "$(cd "$lib" && pwd -P)"; then
  pass "installed package runs a 2-PE ring with its own runtime"
else
  fail "installed package ring"
fi
if env -u SYMM_RUNTIME -u SYMM_LOADER "$lib/symm-info" --json > "$tmp/info.json" &&
   $py - "$tmp/info.json" "$lib" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rt = d["runtime"]
assert d["usable"] and rt["path"].startswith(sys.argv[2]) and d["loader"]["path"].startswith(sys.argv[2]), (rt, d["loader"])
print("symm-info (bundled): runtime", rt["path"], rt["version"])
PY
then
  pass "the bundled symm-info reports the bundled loader and runtime"
else
  fail "bundled symm-info"; cat "$tmp/info.json"
fi
# C against the wheel: the header and loader found through the package
cat > "$tmp/hello.c" <<'C'
#include <stdio.h>
#include <symm/symm.h>
int main(void) {
    symm_ctx ctx;
    if (symm_init(NULL, &ctx)) { fprintf(stderr, "%s\n", symm_last_error()); return 1; }
    int me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_barrier_all(ctx);
    printf("C PE %d of %d\n", me, n);
    return symm_finalize(&ctx) ? 1 : 0;
}
C
inc=$(PYTHONPATH="$tmp/site" $py -c 'import symm; print(symm.get_include())')
libdir=$(PYTHONPATH="$tmp/site" $py -c 'import symm; print(symm.get_library_dir())')
if ${CC:-cc} -o "$tmp/hello" "$tmp/hello.c" -I"$inc" -L"$libdir" -l:libsymm.so.1 -Wl,-rpath,"$libdir" &&
   env -u SYMM_RUNTIME -u SYMM_LOADER "$lib/symmrun" -n 2 --timeout 60 "$tmp/hello" | sort | tr '\n' ' ' |
     grep -q "C PE 0 of 2 C PE 1 of 2"; then
  pass "a C program built with symm.get_include()/get_library_dir() runs on the wheel's runtime"
else
  fail "C program against the wheel"
fi
if command -v pkg-config >/dev/null 2>&1; then
  if flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs symm) &&
     ${CC:-cc} -o "$tmp/hello2" "$tmp/hello.c" $flags && "$tmp/hello2" >/dev/null; then
    pass "symm.pc of the wheel: $flags"
  else
    fail "symm.pc of the wheel"
  fi
else
  echo "SKIP symm.pc (no pkg-config here)"
fi
if env -u SYMM_LOADER SYMM_RUNTIME=/nonexistent PYTHONPATH="$tmp/site" $py -c '
import symm
assert not symm.available()
try:
    symm.init()
except symm.LibraryNotFound as e:
    print("LibraryNotFound:", e.message.splitlines()[0])
'; then
  pass "installed package falls back with the runtime missing"
else
  fail "installed package fallback"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
