#!/usr/bin/env bash
# The Zig bindings' suite: bindings/zig/test.sh BUILD_DIR
#
# BUILD_DIR is a meson build of symm (runtime/libsymm_runtime.so.1 and
# runtime/symmrun built). Zig is the pinned ziglang release from PyPI, run
# as `python3 -m ziglang`: an importable one of that version is used, else
# it is installed into BUILD_DIR/bindings/zig/ziglang-VERSION (pip --target).
#   1. zig fmt --check; zig build: the example and the test programs (the C
#      loader with -Wall -Wextra -Werror)
#   2. zig build test: unit tests, the ABI check against abi/symm-abi.json,
#      the missing-runtime tests, the single-PE tests (host backend)
#   3. the ABI check fails on drifted copies of abi/symm-abi.json, and on a
#      copy of the checkout whose header gained entries (self-tests)
#   4. zig build docs: Zig's HTML documentation of the module
#   5. four_pes on 4 PEs under symmrun; peer_failure on 2 (a PE leaves)
#   6. the ring example on 4 PEs, with SYMM_RUNTIME=/nonexistent, and with
#      the runtime found in the executable's own directory
#   7. README.md's example as a project of its own, on 4 PEs and without runtime
# Everything Zig writes goes to BUILD_DIR/bindings/zig. Exit 0 only if all pass.
set -u
ZIG_VERSION=0.15.2
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR (a meson build directory of symm)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
work="$build/bindings/zig"
mkdir -p "$work"

for f in runtime/libsymm_runtime.so.1 runtime/symmrun; do
  if [ ! -e "$build/$f" ]; then
    echo "zig bindings: FAILED: $build/$f is missing (ninja -C $build first)"
    exit 1
  fi
done
runtime="$build/runtime/libsymm_runtime.so.1"
symmrun="$build/runtime/symmrun"

# --- Zig ---------------------------------------------------------------
zig_dir="$work/ziglang-$ZIG_VERSION"
zig_version() { python3 -m ziglang version 2>/dev/null; }
if [ "$(zig_version)" = "$ZIG_VERSION" ]; then
  :
elif [ "$(PYTHONPATH="$zig_dir" zig_version)" = "$ZIG_VERSION" ]; then
  export PYTHONPATH="$zig_dir"
else
  if ! command -v python3 >/dev/null; then
    echo "zig bindings: FAILED: python3 is not installed; Zig $ZIG_VERSION comes from the ziglang package on PyPI"
    exit 1
  fi
  echo "=== zig: installing ziglang==$ZIG_VERSION from PyPI into $zig_dir"
  rm -rf "$zig_dir"
  if ! out=$(python3 -m pip install --disable-pip-version-check --no-input --quiet \
      --target "$zig_dir" "ziglang==$ZIG_VERSION" 2>&1); then
    echo "$out" | tail -n 15
    echo "zig bindings: FAILED: could not install Zig $ZIG_VERSION (python3 -m pip install ziglang==$ZIG_VERSION failed, see above;"
    echo "  pip must be able to reach PyPI, or install it yourself: python3 -m pip install ziglang==$ZIG_VERSION)"
    exit 1
  fi
  export PYTHONPATH="$zig_dir"
  if [ "$(zig_version)" != "$ZIG_VERSION" ]; then
    echo "zig bindings: FAILED: ziglang==$ZIG_VERSION was installed into $zig_dir but 'python3 -m ziglang version' says '$(zig_version)'"
    exit 1
  fi
fi

# The tests choose their runtime themselves; an inherited one would win.
unset SYMM_RUNTIME SYMM_RANK SYMM_N_PES SYMM_LAUNCHER SYMM_BACKEND
out="$work/out"
zig_build() {
  (cd "$here" && nice -n 5 python3 -m ziglang build "$@" -j2 --summary failures \
    --cache-dir "$work/cache" --global-cache-dir "$work/global-cache" -p "$out")
}

failed=()
step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== zig: $name"
  if "$@"; then
    echo "--- zig: $name: ok ($((SECONDS - t0)) s)"
  else
    echo "--- zig: $name: FAILED ($((SECONDS - t0)) s)"
    failed+=("$name")
  fi
}

abi_drift() {
  # Each drift of the JSON must make the check fail with its own message.
  local drift="$work/drift" ok=0 name want res
  rm -rf "$drift" && mkdir -p "$drift"
  python3 - "$src/abi/symm-abi.json" "$drift" <<'PY' || return 1
import copy, json, sys
base = json.load(open(sys.argv[1]))
def make(name, change):
    d = copy.deepcopy(base)
    change(d)
    json.dump(d, open(f"{sys.argv[2]}/{name}.json", "w"))
def fn(d, name):
    return next(f for f in d["functions"] if f["name"] == name)
def const(d, name):
    return next(c for c in d["constants"] if c["name"] == name)
def field(d, struct, name):
    s = next(s for s in d["structs"] if s["name"] == struct)
    return next(f for f in s["fields"] if f["name"] == name)
make("new_function", lambda d: d["functions"].append(dict(fn(d, "symm_quiet"), name="symm_quiet_all")))
make("param_type", lambda d: fn(d, "symm_put")["params"][1].update(c_type="uint32_t"))
make("new_param", lambda d: fn(d, "symm_fence")["params"].append({"name": "flags", "c_type": "uint32_t"}))
make("constant_value", lambda d: const(d, "SYMM_CMP_LE").update(value=9))
make("new_enum_constant", lambda d: d["constants"].append({"name": "SYMM_OP_MINLOC", "value": 7, "group": "op"}))
make("new_status", lambda d: (d["statuses"].append({"name": "SYMM_ERR_BUSY", "value": 19, "description": "busy"}),
                             d["constants"].append({"name": "SYMM_ERR_BUSY", "value": 19, "group": "status"})))
make("field_offset", lambda d: field(d, "symm_ctx_info", "heap_cap").update(offset=36))
make("struct_size", lambda d: next(s for s in d["structs"] if s["name"] == "symm_init_attr").update(size=176))
make("new_typedef", lambda d: d["typedefs"].append({"name": "symm_event", "kind": "handle"}))
PY
  while IFS='|' read -r name want; do
    res=$("$out/bin/symm-abi_check" "$drift/$name.json" "$here/src/symm.zig" 2>&1)
    if [ $? -ne 1 ] || ! grep -qF "$want" <<<"$res"; then
      echo "drift '$name' was not reported as expected (wanted: $want):"
      echo "$res"
      ok=1
    else
      echo "drift '$name': $(grep -F "$want" <<<"$res" | head -n 1)"
    fi
  done <<'EOF'
new_function|function symm_quiet_all is neither wrapped
param_type|function symm_put: parameter 1 (dst_index) is uint64_t in translate-c, uint32_t in the ABI
new_param|function symm_fence: 1 parameters in translate-c, 2 in the ABI
constant_value|constant SYMM_CMP_LE is 5 in translate-c, 9 in the ABI
new_enum_constant|constant SYMM_OP_MINLOC has no member minloc in symm.ReduceOp
new_status|status SYMM_ERR_BUSY (19) is not mapped by symm.status_errors (wanted error.Busy)
field_offset|struct symm_ctx_info.heap_cap: offset 32 in translate-c, 36 in the ABI
struct_size|struct symm_init_attr: size 168 in translate-c, 176 in the ABI
new_typedef|typedef symm_event is not declared by translate-c
EOF
  return $ok
}

header_drift() {
  # A copy of the checkout whose header gained a function and a reduction
  # op: the JSON regenerated from it and translate-c of it agree with each
  # other, and the check must still fail because the wrapper lacks both.
  local tree="$work/drift-tree" res rc
  rm -rf "$tree" && mkdir -p "$tree/docs" "$tree/bindings/zig" || return 1
  cp -r "$src/include" "$src/loader" "$src/abi" "$tree/" && cp "$src/docs/ABI.md" "$tree/docs/" &&
    cp -r "$here/build.zig" "$here/build.zig.zon" "$here/src" "$here/tests" "$here/examples" \
      "$tree/bindings/zig/" || return 1
  python3 - "$tree" <<'PY' || return 1
import sys
tree = sys.argv[1]
h = tree + "/include/symm/symm.h"
text = open(h).read()
text = text.replace("#define SYMM_OP_XOR  6", "#define SYMM_OP_XOR  6\n#define SYMM_OP_MINLOC 7", 1)
proto = ("/* Contract: local; thread: any; errors: none; keeps: none. */\n"
         "SYMM_API int32_t symm_drift_probe(symm_ctx ctx);\n\n#ifdef __cplusplus\n}")
assert text.count("#ifdef __cplusplus\n}") == 1
text = text.replace("#ifdef __cplusplus\n}", proto)
open(h, "w").write(text)
# ... and the loader answers it, as a real addition would.
open(tree + "/loader/symm_loader.c", "a").write(
    "\nSYMM_API int32_t symm_drift_probe(symm_ctx ctx) { (void)ctx; return -1; }\n")
# a node of the next minor, after the map's last one (as check_symbols.py expects)
import re
m = tree + "/abi/symm.map"
last = max(int(x) for x in re.findall(r"^SYMM_1\.(\d+) \{", open(m).read(), re.M))
open(m, "a").write("\nSYMM_1.%d {\n  global:\n    symm_drift_probe;\n} SYMM_1.%d;\n" % (last + 1, last))
PY
  res=$(python3 "$tree/abi/gen_abi_json.py" --write 2>&1) || { echo "$res"; return 1; }
  (cd "$tree/bindings/zig" && nice -n 5 python3 -m ziglang build abi-check -j2 --summary failures \
    --cache-dir "$work/cache" --global-cache-dir "$work/global-cache" -p "$tree/out") || return 1
  res=$("$tree/out/bin/symm-abi_check" "$tree/abi/symm-abi.json" "$tree/bindings/zig/src/symm.zig" 2>&1)
  rc=$?
  echo "$res"
  [ $rc -eq 1 ] && grep -q "function symm_drift_probe is neither wrapped" <<<"$res" &&
    grep -q "constant SYMM_OP_MINLOC has no member minloc in symm.ReduceOp" <<<"$res"
}

docs_built() {
  zig_build docs || return 1
  [ -s "$out/docs/index.html" ] || { echo "no $out/docs/index.html"; return 1; }
  tar tf "$out/docs/sources.tar" | grep -q 'symm.zig' || { echo "sources.tar lacks symm.zig"; return 1; }
  echo "docs: $out/docs/index.html"
}

four_pes() {
  local res
  res=$(SYMM_RUNTIME="$runtime" "$symmrun" -n 4 --timeout 120 -- "$out/bin/symm-four_pes" 2>&1)
  local rc=$?
  echo "$res"
  [ $rc -eq 0 ] && [ "$(grep -c 'of 4: all checks passed' <<<"$res")" -eq 4 ]
}

peer_failure() {
  local res
  res=$(SYMM_RUNTIME="$runtime" "$symmrun" -n 2 --timeout 60 -- "$out/bin/symm-peer_failure" 2>&1)
  local rc=$?
  echo "$res"
  [ $rc -eq 0 ] && grep -q 'PE 0: error.PeerFailed as expected' <<<"$res" &&
    grep -q 'PE 0: finalize reports error.PeerFailed as expected' <<<"$res"
}

ring_4pes() {
  local res
  res=$(SYMM_RUNTIME="$runtime" "$symmrun" -n 4 --timeout 60 -- "$out/bin/ring" 2>&1)
  local rc=$?
  echo "$res"
  [ $rc -eq 0 ] && [ "$(grep -c 'ring ok, sum 6 (ok)' <<<"$res")" -eq 4 ]
}

ring_missing_runtime() {
  local res
  res=$(SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1 "$out/bin/ring" 2>&1)
  local rc=$?
  echo "$res"
  [ $rc -eq 0 ] && grep -q 'SYMM_ERR_LIBRARY_NOT_FOUND' <<<"$res" &&
    grep -q 'running single-process: sum = 0 (ok)' <<<"$res"
}

ring_exe_dir() {
  # The loader compiled into the program looks beside the executable.
  local dir="$work/exe-dir" res
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$out/bin/ring" "$dir/ring" && ln -s "$runtime" "$dir/libsymm_runtime.so.1" || return 1
  res=$(SYMM_BACKEND=host "$dir/ring" 2>&1)
  local rc=$?
  echo "$res"
  [ $rc -eq 0 ] && grep -qF "PE 0 of 1 ($dir/libsymm_runtime.so.1): ring ok, sum 0 (ok)" <<<"$res"
}

readme_example() {
  # The three files of README.md's example, as a project of its own.
  local dir="$work/readme-example" res
  rm -rf "$dir" && mkdir -p "$dir/src"
  python3 - "$here/README.md" "$dir" "$here" <<'PY' || return 1
import os, re, sys
readme, dst, pkg = sys.argv[1:]
blocks = re.findall(r"```zig\n(.*?)```", open(readme).read(), re.S)
zon, build, main = blocks[:3]
assert '"../symm/bindings/zig"' in zon, "the README's build.zig.zon has no symm path"
zon = zon.replace('"../symm/bindings/zig"', '"%s"' % os.path.relpath(pkg, dst))
for name, text in (("build.zig.zon", zon), ("build.zig", build), ("src/main.zig", main)):
    open(os.path.join(dst, name), "w").write(text)
PY
  (cd "$dir" && nice -n 5 python3 -m ziglang build -j2 --summary failures \
    --cache-dir "$work/cache" --global-cache-dir "$work/global-cache" -p "$dir/zig-out") || return 1
  res=$(SYMM_RUNTIME="$runtime" "$symmrun" -n 4 --timeout 60 -- "$dir/zig-out/bin/my-program" 2>&1)
  local rc=$?
  echo "$res"
  [ $rc -eq 0 ] && [ "$(grep -c 'of 4: sum 6$' <<<"$res")" -eq 4 ] || return 1
  res=$(SYMM_RUNTIME=/nonexistent "$dir/zig-out/bin/my-program" 2>&1)
  rc=$?
  echo "$res"
  [ $rc -eq 0 ] && grep -q 'symm is not available here: symm: no usable runtime' <<<"$res"
}

echo "zig: $(python3 -m ziglang version) (python3 -m ziglang, $(python3 -c 'import ziglang, os; print(os.path.dirname(ziglang.__file__))'))"
step "zig fmt --check" bash -c 'cd "$1" && python3 -m ziglang fmt --check build.zig build.zig.zon src tests examples' _ "$here"
step "zig build" zig_build
if [[ " ${failed[*]-} " != *" zig build "* ]]; then
  step "zig build test" zig_build test -Dsymm-runtime="$runtime"
  step "abi check fails on drift" abi_drift
  step "abi check fails on a drifted header" header_drift
  step "zig build docs" docs_built
  step "four_pes on 4 PEs" four_pes
  step "a PE leaving gives error.PeerFailed" peer_failure
  step "example ring on 4 PEs" ring_4pes
  step "example ring without a runtime" ring_missing_runtime
  step "example ring finds the runtime beside it" ring_exe_dir
  step "README example" readme_example
fi

if [ ${#failed[@]} -ne 0 ]; then
  echo "zig bindings: FAILED: ${failed[*]}"
  exit 1
fi
echo "zig bindings: all steps passed"
