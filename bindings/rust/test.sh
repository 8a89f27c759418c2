#!/usr/bin/env bash
# The Rust bindings' suite: bindings/rust/test.sh BUILD_DIR
#
# BUILD_DIR is a meson build of symm (runtime/libsymm_runtime.so.1 and
# runtime/symmrun built). Offline: the workspace depends on std only.
#   1. symm-sys/src/bindings.rs is what gen_sys.py makes from symm.h now;
#      cargo fmt --check (when rustfmt is installed)
#   2. cargo build (crates, tests, the example), warnings are errors
#   3. cargo test: unit tests, the ABI check against abi/symm-abi.json, the
#      missing-runtime test, single-PE tests, 4 PEs under symmrun, doc tests
#   4. cargo doc and (when installed) cargo clippy without warnings
#   5. the ring example on 4 PEs under symmrun, and with SYMM_RUNTIME=/nonexistent
#   6. README.md's example as a package of its own, the same two ways
#   7. cargo package --workspace --offline: both crates, each verified by a build
#      from the packaged sources alone (symm-sys carries the loader in csrc/)
# Cargo's output goes to BUILD_DIR/bindings/rust/target. Exit 0 only if all pass.
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR (a meson build directory of symm)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)

# Rust >= 1.77 (the crates' rust-version). Used in this order: cargo in PATH,
# ${CARGO_HOME:-~/.cargo}/bin (rustup), else, as root with apt-get, Debian's
# toolchain is installed: cargo-web/rustc-web (Debian 12: Rust 1.85 and later;
# its plain 'cargo' is Rust 1.63, too old), or 'cargo' where that is recent.
rust_min=1.77
rust_ok() { # $1: a rustc; true when it is >= $rust_min
  local v
  v=$("$1" --version 2>/dev/null | awk '{print $2}')
  [ -n "$v" ] && python3 - "$v" "$rust_min" <<'PY'
import sys
v = [int(x) for x in sys.argv[1].split("-")[0].split(".")[:2]]
m = [int(x) for x in sys.argv[2].split(".")]
sys.exit(0 if v >= m else 1)
PY
}
find_rust() { # sets cargo, puts its directory first in PATH; true when usable
  local d
  for d in "$(dirname "$(command -v cargo 2>/dev/null || echo /nonexistent/cargo)")" \
      "${CARGO_HOME:-$HOME/.cargo}/bin" /usr/bin; do
    if [ -x "$d/cargo" ] && rust_ok "$d/rustc"; then
      cargo=$d/cargo
      export PATH="$d:$PATH"
      return 0
    fi
  done
  return 1
}
cargo=
if ! find_rust && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  log=$build/bindings/rust-apt.log
  mkdir -p "$build/bindings"
  apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }
  for pkg in cargo-web cargo; do
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
      apt_get update -qq >>"$log" 2>&1
      apt-cache show "$pkg" >/dev/null 2>&1 || continue
    fi
    echo "rust bindings: no Rust >= $rust_min: apt-get install $pkg"
    if ! apt_get install -y -qq "$pkg" >>"$log" 2>&1; then
      apt_get update -qq >>"$log" 2>&1
      apt_get install -y -qq "$pkg" >>"$log" 2>&1
    fi
    hash -r
    find_rust && break
  done
fi
if [ -z "$cargo" ]; then
  found=$(command -v rustc >/dev/null 2>&1 && rustc --version || echo "none")
  echo "rust bindings: FAILED: no Rust toolchain >= $rust_min (cargo + rustc) found or installed (found: $found)."
  echo "  Looked in PATH, ${CARGO_HOME:-$HOME/.cargo}/bin and /usr/bin; as root this script installs"
  echo "  Debian's cargo-web (Rust >= 1.85 on Debian 12; log: $build/bindings/rust-apt.log). Otherwise install"
  echo "  Rust >= $rust_min with rustup (https://rustup.rs) or your distribution, then run it again."
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
  local t0=$SECONDS
  echo "=== rust: $name"
  if "$@"; then
    echo "--- rust: $name: ok ($((SECONDS - t0)) s)"
  else
    echo "--- rust: $name: FAILED ($((SECONDS - t0)) s)"
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

# The README's example as a user's own package: its Cargo.toml dependency
# (the path pointed at this checkout) and src/main.rs, built offline (the
# crates depend on std only), run on 4 PEs and without a runtime.
readme_example() {
  local dir=$build/bindings/rust/readme-example o
  rm -rf "$dir" && mkdir -p "$dir/src" || return 1
  python3 - "$here/README.md" "$dir" "$here/symm" <<'PY' || return 1
import re, sys
readme, dst, crate = sys.argv[1:]
text = open(readme).read()
toml = re.findall(r"```toml\n(.*?)```", text, re.S)[0]
main = re.findall(r"```rust[^\n]*\n(.*?)```", text, re.S)[0]
assert "/path/to/symm/bindings/rust/symm" in toml, "README's Cargo.toml names no symm path"
toml = toml.replace("/path/to/symm/bindings/rust/symm", crate)
head = '[package]\nname = "my-program"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n\n'
open(dst + "/Cargo.toml", "w").write(head + toml)
open(dst + "/src/main.rs", "w").write(main)
PY
  (cd "$dir" && "$cargo" build --offline --quiet) || return 1
  o=$("$build/runtime/symmrun" -n 4 --timeout 60 -- "$CARGO_TARGET_DIR/debug/my-program" 2>&1) || {
    echo "$o"
    return 1
  }
  echo "$o"
  [ "$(grep -c 'of 4: sum 6$' <<<"$o")" -eq 4 ] || return 1
  o=$(SYMM_RUNTIME=/nonexistent "$CARGO_TARGET_DIR/debug/my-program" 2>&1) || { echo "$o"; return 1; }
  echo "$o"
  grep -q '^symm is not available here: symm: no usable runtime' <<<"$o"
}

# cargo package of both crates, offline, each verified by building the
# packaged sources alone: symm-sys from its csrc/ copy (sync_csrc.sh; no
# SYMM_SOURCE_DIR, and no checkout above target/package/), symm against that
# packaged symm-sys (cargo's local registry for workspace members). Both
# carry LICENSE; symm-sys carries the loader's sources.
cargo_package() {
  local pkg=$CARGO_TARGET_DIR/package f list
  bash symm-sys/sync_csrc.sh || return 1
  rm -f "$pkg"/symm-*.crate
  env -u SYMM_SOURCE_DIR "$cargo" package --workspace --offline --allow-dirty || return 1
  list=$(tar tzf "$pkg/symm-sys-$version.crate") || return 1
  for f in LICENSE build.rs csrc/loader/symm_loader.c csrc/abi/symm_dispatch.h \
           csrc/include/symm/symm.h src/bindings.rs; do
    grep -qx "symm-sys-$version/$f" <<<"$list" || { echo "symm-sys crate lacks $f"; return 1; }
  done
  list=$(tar tzf "$pkg/symm-$version.crate") || return 1
  for f in LICENSE README.md src/lib.rs; do
    grep -qx "symm-$version/$f" <<<"$list" || { echo "symm crate lacks $f"; return 1; }
  done
  for f in symm/LICENSE symm-sys/LICENSE; do
    cmp -s "$f" "$src/LICENSE" || { echo "$f differs from the repository's LICENSE"; return 1; }
  done
}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)

echo "rust: $("$cargo" --version), $(rustc --version 2>/dev/null)"
step "bindings.rs up to date" python3 symm-sys/gen_sys.py --check
if "$cargo" fmt --version >/dev/null 2>&1; then
  step "cargo fmt --check" "$cargo" fmt --check
else
  echo "=== rust: rustfmt is not installed: format step not run (not a test)"
fi
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
  step "README example (own package) on 4 PEs and without a runtime" readme_example
  step "cargo package (both crates, offline, built from the packages alone)" cargo_package
fi

if [ ${#failed[@]} -ne 0 ]; then
  echo "rust bindings: FAILED: ${failed[*]}"
  exit 1
fi
echo "rust bindings: all steps passed"
