#!/usr/bin/env bash
# The Rust bindings' suite: bindings/rust/test.sh BUILD_DIR
#
# BUILD_DIR is a meson build of symm (runtime/libsymm_runtime.so.1 and
# runtime/symmrun built). Offline: the workspace depends on std only.
#   1. symm-sys/src/bindings.rs is what gen_sys.py makes from symm.h now
#   2. cargo build (crates, tests, the example), warnings are errors
#   3. cargo test: unit tests, the ABI check against abi/symm-abi.json, the
#      missing-runtime test, single-PE tests, 4 PEs under symmrun, doc tests
#   4. cargo doc and (when installed) cargo clippy without warnings
#   5. the ring example on 4 PEs under symmrun, and with SYMM_RUNTIME=/nonexistent
# Cargo's output goes to BUILD_DIR/bindings/rust/target. Exit 0 only if all pass.
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR (a meson build directory of symm)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)

cargo=$(command -v cargo || true)
if [ -z "$cargo" ] && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
  cargo=${CARGO_HOME:-$HOME/.cargo}/bin/cargo
  export PATH="$(dirname "$cargo"):$PATH"
fi
if [ -z "$cargo" ]; then
  echo "rust bindings: FAILED: cargo is not installed (not in PATH nor ${CARGO_HOME:-$HOME/.cargo}/bin);"
  echo "  install a Rust toolchain >= 1.77 (rustup, or apt-get install cargo) to run this suite"
  exit 1
fi
for f in runtime/libsymm_runtime.so.1 runtime/symmrun; do
  if [ ! -e "$build/$f" ]; then
    echo "rust bindings: FAILED: $build/$f is missing (ninja -C $build first)"
    exit 1
  fi
done

export CARGO_TARGET_DIR="$build/bindings/rust/target"
export SYMM_BUILD_DIR="$build"
export SYMM_SOURCE_DIR="$src"
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
export RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings"
export CARGO_TERM_COLOR=never
# The tests choose their runtime themselves; an inherited one would win.
unset SYMM_RUNTIME SYMM_RANK SYMM_N_PES SYMM_LAUNCHER
cd "$here"

failed=()
step() {
  local name=$1
  shift
  echo "=== rust: $name"
  if "$@"; then
    echo "--- rust: $name: ok"
  else
    echo "--- rust: $name: FAILED"
    failed+=("$name")
  fi
}

ring_4pes() {
  local out
  out=$("$build/runtime/symmrun" -n 4 --timeout 60 -- "$CARGO_TARGET_DIR/debug/examples/ring") || {
    echo "$out"
    return 1
  }
  echo "$out"
  [ "$(grep -c 'ring ok, sum 6 (ok)' <<<"$out")" -eq 4 ]
}

ring_missing_runtime() {
  local out
  out=$(SYMM_RUNTIME=/nonexistent/libsymm_runtime.so.1 "$CARGO_TARGET_DIR/debug/examples/ring") || {
    echo "$out"
    return 1
  }
  echo "$out"
  grep -q 'SYMM_ERR_LIBRARY_NOT_FOUND' <<<"$out" && grep -q 'single-process sum = 0 (ok)' <<<"$out"
}

echo "rust: $("$cargo" --version), $(rustc --version 2>/dev/null)"
step "bindings.rs up to date" python3 symm-sys/gen_sys.py --check
step "cargo build" "$cargo" build --offline --workspace --all-targets
if [ ${#failed[@]} -eq 0 ]; then
  step "cargo test" "$cargo" test --offline --workspace
  step "cargo doc" "$cargo" doc --offline --workspace --no-deps
  if "$cargo" clippy --version >/dev/null 2>&1; then
    step "cargo clippy" "$cargo" clippy --offline --workspace --all-targets
  else
    echo "=== rust: cargo clippy is not installed: lint step not run (not a test)"
  fi
  step "example ring on 4 PEs" ring_4pes
  step "example ring without a runtime" ring_missing_runtime
fi

if [ ${#failed[@]} -ne 0 ]; then
  echo "rust bindings: FAILED: ${failed[*]}"
  exit 1
fi
echo "rust bindings: all steps passed"
