#!/usr/bin/env bash
# pip-installs the symm package from a fresh copy of this checkout's tracked
# files into a fresh target directory, offline (the in-tree backend runs the
# project's Meson build and bundles the loader, runtime, symmrun and
# symm-info), then runs a 2-PE ring from the installed copy, using nothing
# from the build tree, symm-info from the package, and the missing-runtime
# fallback.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: test_install.sh MESON_BUILD_DIR}
build=$(cd "$build" && pwd) || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}
if ! $py -m pip --version >/dev/null 2>&1; then
  echo "FAIL: $py has no pip (apt-get install python3-pip)"; exit 1
fi
root=$(cd "$here/../.." && pwd)
# "From a fresh clone": the tracked files of this checkout (as they are in the
# working tree), copied to a folder of their own beside the test build, so no
# build output or untracked file of the checkout can help. The copy keeps its
# place between runs (rsync-like refresh), and so does its wheel build
# directory: reruns rebuild only what changed.
clone="$build/python-fresh-clone"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  rm -rf "$clone.new" && mkdir -p "$clone.new" &&
    (cd "$root" && git ls-files -z --cached | xargs -0 cp --parents -t "$clone.new" 2>/dev/null)
  # keep unchanged files' times (ninja), take new contents
  mkdir -p "$clone"
  (cd "$clone.new" && find . -type f -print0) | while IFS= read -r -d '' f; do
    if ! cmp -s "$clone.new/$f" "$clone/$f"; then mkdir -p "$clone/$(dirname "$f")"; cp -p "$clone.new/$f" "$clone/$f"; fi
  done
  (cd "$clone" && find . -type f -print0) | while IFS= read -r -d '' f; do
    [ -e "$clone.new/$f" ] || rm -f "$clone/$f"
  done
  rm -rf "$clone.new"
else
  echo "note: not a git checkout; installing from the tree as it is"
  clone=$root
fi
export SYMM_WHEEL_BUILDDIR="$build/python-wheel-build-clone"
# The CUDA kernels are compiled (and tested) by the main build already; here
# the packaging is under test, so the wheel is built without them to save
# minutes on 2 cores (SYMM_WHEEL_MESON_ARGS overrides).
export SYMM_WHEEL_MESON_ARGS=${SYMM_WHEEL_MESON_ARGS:--Dcuda=disabled}
# One plain pip install, offline (--no-index: nothing may be downloaded; the
# build backend is in the tree and needs only meson and ninja on PATH), with
# pip's build isolation as a user gets it.
if ! $py -m pip install -q --disable-pip-version-check --no-index \
      --target "$tmp/site" "$clone/bindings/python" 2>&1 | grep -v "Running pip as the 'root'"; then :; fi
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
# symm-info from the package: finds the bundled runtime by itself.
if env -u SYMM_RUNTIME -u SYMM_LOADER "$tmp/site/symm/_lib/symm-info" --json > "$tmp/info.json" &&
   $py - "$tmp/info.json" "$tmp/site/symm/_lib" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rt = d["runtime"]
assert d["usable"] and rt["path"].startswith(sys.argv[2]) and d["loader"]["path"].startswith(sys.argv[2]), (rt, d["loader"])
print("symm-info (bundled): runtime", rt["path"], rt["version"])
PY
then
  passed=$((passed + 1)); echo "PASS the bundled symm-info reports the bundled loader and runtime"
else
  failed=$((failed + 1)); echo "FAIL bundled symm-info"; cat "$tmp/info.json"
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
