#!/usr/bin/env bash
# What a newcomer does in the first minutes, on a clean copy of this checkout
# (its tracked files as they are in the working tree, copied into a temporary
# folder: nothing built or untracked here can help):
#   the demo (timed); pip install of the Python package into a fresh venv
#   (timed); the README examples of every language (C: the demo; Python:
#   ring.py, taken from the Python README; Rust, Go, Zig: examples/ring as
#   their READMEs build and run it); symmrun --version and symm-info --version;
#   man -l on the symmrun man page; a C program built against the wheel's
#   header and loader (symm.get_include(), symm.get_library_dir()); cargo
#   package of both crates.
#   bash scripts/newcomer.sh
# Each step prints PASS, FAIL or SKIP (reason); the script fails if any step
# fails. scripts/test.sh runs it as a phase of its own. Timings are printed,
# not checked (the demo's figure is a benchmark in docs/TESTS.md).
# SYMM_NEWCOMER_KEEP=1 keeps the temporary folder (its path is printed).
set -u

# The Python package (relative to the repository root) and pip's arguments.
PY_PKG=${SYMM_NEWCOMER_PY_PKG:-.}  # pyproject.toml at the root (meson-python)
PY_README=${SYMM_NEWCOMER_PY_README:-bindings/python/README.md}
PY_EXTRAS=${SYMM_NEWCOMER_PY_EXTRAS:-[numpy]}
PIP_ARGS=${SYMM_NEWCOMER_PIP_ARGS:-}
ZIG_VERSION=0.15.2

root=$(cd "$(dirname "$0")/.." && pwd)
# A newcomer's environment: nothing pointing into a build or a checkout.
unset SYMM_RUNTIME SYMM_LOADER SYMM_SOURCE_DIR
tmp=$(mktemp -d "${TMPDIR:-/tmp}/symm-newcomer.XXXXXX") || exit 1
if [ "${SYMM_NEWCOMER_KEEP:-0}" = 1 ]; then echo "newcomer: working in $tmp (kept)"
else trap 'rm -rf "$tmp"' EXIT; fi
src=$tmp/symm
venv=$tmp/venv
logs=$tmp/logs
mkdir -p "$src" "$logs"

passed=0; failed=0; skipped=0; results=()
# step NAME CMD...: runs CMD with its output in $logs/NAME.log; exit 77 is a
# skip whose reason is the log's last line. A failure prints the log's tail.
step() {
  local name=$1; shift
  local log="$logs/${name//[^A-Za-z0-9_.-]/_}.log" t=$SECONDS rc
  ( "$@" ) >"$log" 2>&1; rc=$?
  local dt=$((SECONDS - t))
  if [ $rc = 0 ]; then
    passed=$((passed + 1)); results+=("PASS $name (${dt} s)")
    echo "PASS $name (${dt} s)"
  elif [ $rc = 77 ]; then
    skipped=$((skipped + 1)); results+=("SKIP $name ($(tail -n 1 "$log"))")
    echo "SKIP $name ($(tail -n 1 "$log"))"
  else
    failed=$((failed + 1)); results+=("FAIL $name (${dt} s)")
    echo "FAIL $name (exit $rc, ${dt} s); last lines of its output:"
    tail -n 25 "$log" | sed 's/^/    /'
  fi
  return $rc
}
skip() { echo "$*"; exit 77; }  # inside a step's subshell

# ---- a clean copy
copy() {
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z --cached |
       tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$src"
  else
    echo "not a git checkout: copying the tree as it is (build directories left out)"
    (cd "$root" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$src"
  fi
  [ -f "$src/meson.build" ] && [ -f "$src/scripts/demo.sh" ]
}
step "clean copy of the tracked files" copy || { echo "newcomer: cannot copy the tree"; exit 1; }

# ---- the demo (C examples), host backend unless a GPU is here
demo_out=$logs/demo.out
demo() {
  (cd "$src" && bash scripts/demo.sh) 2>&1 | tee "$demo_out"
  [ "${PIPESTATUS[0]}" = 0 ] && grep -q '^demo: done' "$demo_out"
}
t=$SECONDS
step "demo (bash scripts/demo.sh, the C examples)" demo
demo_s=$((SECONDS - t))
backend=$(grep -m1 '^== backend:' "$demo_out" 2>/dev/null | sed 's/^== //')
echo "     demo: ${demo_s} s, ${backend:-backend not printed}"
demo_build=$src/build-demo
grep -q '^== backend: CUDA' "$demo_out" 2>/dev/null && demo_build=$src/build-demo-cuda
symmrun_c=$demo_build/runtime/symmrun

# ---- pip install into a fresh venv
vpy=$venv/bin/python
pip_install() {
  python3 -m venv "$venv" || { echo "python3 -m venv failed (Debian: apt-get install python3-venv)"; return 1; }
  # shellcheck disable=SC2086
  "$vpy" -m pip install --disable-pip-version-check $PIP_ARGS "$src/$PY_PKG$PY_EXTRAS"
}
t=$SECONDS
step "pip install ./$PY_PKG$PY_EXTRAS into a fresh venv" pip_install
pip_s=$((SECONDS - t))
echo "     pip install: ${pip_s} s"
have_pkg() { [ -x "$vpy" ] && "$vpy" -c 'import symm' >/dev/null 2>&1; }

# ---- Python: the README's ring.py
py_ring() {
  have_pkg || skip "the package is not installed (pip install failed)"
  "$vpy" - "$src/$PY_README" "$tmp/ring.py" <<'PY' || return 1
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```python\n(.*?)```", text, re.S)
ring = [b for b in blocks if b.startswith("# ring.py")]
if not ring:
    sys.exit("no ```python block starting with '# ring.py' in " + sys.argv[1])
open(sys.argv[2], "w").write(ring[0])
PY
  (cd "$tmp" && PATH="$venv/bin:$PATH" symmrun -n 4 python3 ring.py)
}
step "Python README example (symmrun -n 4 python3 ring.py)" py_ring

# ---- symmrun --version, symm-info --version (as installed by pip)
version_of() {  # TOOL: prints the version, which must be the project's
  have_pkg || skip "the package is not installed (pip install failed)"
  local want out
  want=$(sed -n "s/^  version: '\([0-9.]*\)'.*/\1/p" "$src/meson.build" | head -n 1)
  out=$("$venv/bin/$1" --version) || { echo "$1 --version failed: $out"; return 1; }
  echo "$out"
  case "$out" in *"$want"*) return 0 ;; esac
  echo "expected version $want in the output"; return 1
}
step "symmrun --version" version_of symmrun
step "symm-info --version" version_of symm-info

# ---- man symmrun: the generated page, from the demo's build or the package
man_page() {
  command -v man >/dev/null 2>&1 || skip "man is not installed (apt-get install man-db)"
  local page tgt
  page=$(find "$demo_build" "$venv" -name 'symmrun.1' -type f 2>/dev/null | head -n 1)
  if [ -z "$page" ] && [ -f "$demo_build/build.ninja" ]; then
    tgt=$(ninja -C "$demo_build" -t targets all 2>/dev/null | sed -n 's/^\([^:]*symmrun\.1\): .*/\1/p' | head -n 1)
    [ -n "$tgt" ] && ninja -C "$demo_build" "$tgt" && page=$demo_build/$tgt
  fi
  [ -n "$page" ] && [ -f "$page" ] || { echo "no symmrun.1 in the build ($demo_build) or the package"; return 1; }
  echo "page: $page"
  local out; out=$(MANWIDTH=80 man -l "$page" 2>&1) || { echo "$out"; return 1; }
  echo "$out" | head -n 20
  echo "$out" | grep -q symmrun
}
step "man -l symmrun.1" man_page

# ---- C against the wheel's header and loader
c_wheel() {
  have_pkg || skip "the package is not installed (pip install failed)"
  local inc lib
  inc=$("$vpy" -c 'import symm; print(symm.get_include())') || return 1
  lib=$("$vpy" -c 'import symm; print(symm.get_library_dir())') || return 1
  echo "get_include: $inc"; echo "get_library_dir: $lib"
  [ -f "$inc/symm/symm.h" ] || { echo "no symm/symm.h under $inc"; return 1; }
  [ -f "$lib/libsymm.so.1" ] || { echo "no libsymm.so.1 in $lib"; return 1; }
  cc -std=gnu11 -Wall -Werror -I"$inc" -o "$tmp/ring_wheel" "$src/examples/ring/ring.c" \
    -L"$lib" -l:libsymm.so.1 -Wl,-rpath,"$lib" || return 1
  "$venv/bin/symmrun" -n 2 "$tmp/ring_wheel"
}
step "C program against symm.get_include()/get_library_dir()" c_wheel

# ---- Rust: examples/ring.rs as its README runs it
find_cargo() {
  local c
  for c in cargo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo"; do
    command -v "$c" >/dev/null 2>&1 && { command -v "$c"; return 0; }
  done
  return 1
}
CARGO=$(find_cargo || true)
rust_ring() {
  [ -n "$CARGO" ] || skip "cargo not found (Rust >= 1.77: rustup, or apt-get install cargo-web)"
  [ -x "$symmrun_c" ] || skip "no symmrun (the demo failed)"
  (cd "$src/bindings/rust" && CARGO_TARGET_DIR="$tmp/cargo-target" "$CARGO" build --offline --example ring) ||
    return 1
  "$symmrun_c" -n 4 "$tmp/cargo-target/debug/examples/ring"
}
step "Rust README example (cargo build; symmrun -n 4 target/debug/examples/ring)" rust_ring

# ---- Go: examples/ring as its README runs it
go_ring() {
  command -v go >/dev/null 2>&1 || skip "go not found (apt-get install golang-go)"
  [ -x "$symmrun_c" ] || skip "no symmrun (the demo failed)"
  (cd "$src/bindings/go" && GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOFLAGS=-mod=mod \
     GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1 go build -o "$tmp/ring_go" ./examples/ring) || return 1
  "$symmrun_c" -n 4 "$tmp/ring_go"
}
step "Go README example (go build ./examples/ring; symmrun -n 4 ./ring)" go_ring

# ---- Zig: examples/ring.zig as its README runs it (Zig from PATH, or the
# ziglang release on PyPI that bindings/zig/test.sh uses)
# the copy the bindings suite installed into the test build, if any
zig_here=$root/${SYMM_BUILD_DIR:-build-test}/bindings/zig/ziglang-$ZIG_VERSION
zig_ring() {
  [ -x "$symmrun_c" ] || skip "no symmrun (the demo failed)"
  local zig=()
  if command -v zig >/dev/null 2>&1 && [ "$(zig version)" = "$ZIG_VERSION" ]; then zig=(zig)
  elif [ "$(python3 -m ziglang version 2>/dev/null)" = "$ZIG_VERSION" ]; then zig=(python3 -m ziglang)
  elif [ -d "$zig_here" ] &&
       [ "$(PYTHONPATH="$zig_here" python3 -m ziglang version 2>/dev/null)" = "$ZIG_VERSION" ]; then
    zig=(env PYTHONPATH="$zig_here" python3 -m ziglang)
  else
    echo "installing ziglang==$ZIG_VERSION from PyPI"
    python3 -m pip install -q --disable-pip-version-check --target "$tmp/ziglang" \
      "ziglang==$ZIG_VERSION" || skip "Zig $ZIG_VERSION not found and not installable (pip install ziglang==$ZIG_VERSION)"
    zig=(env PYTHONPATH="$tmp/ziglang" python3 -m ziglang)
  fi
  (cd "$src/bindings/zig" && "${zig[@]}" build -j2) || return 1
  "$symmrun_c" -n 4 "$src/bindings/zig/zig-out/bin/ring"
}
step "Zig README example (zig build; symmrun -n 4 zig-out/bin/ring)" zig_ring

# ---- cargo package of both crates (each builds from its packaged files
# alone: the workspace is packaged together, symm verified against the
# packaged symm-sys, offline)
cargo_package() {
  [ -n "$CARGO" ] || skip "cargo not found"
  # symm-sys compiles the loader's C files: a packager copies them into the
  # crate first (sync_csrc.sh; csrc/ is not tracked), as bindings/rust/test.sh does
  (cd "$src/bindings/rust" && bash symm-sys/sync_csrc.sh && CARGO_TARGET_DIR="$tmp/cargo-package" \
     "$CARGO" package --offline --workspace --allow-dirty)
}
step "cargo package (symm-sys and symm, verified offline)" cargo_package

echo
echo "newcomer: demo ${demo_s} s (${backend:-?}), pip install ${pip_s} s"
echo "newcomer: $passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
