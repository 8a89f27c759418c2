#!/usr/bin/env bash
# The build step that makes the symm-sys crate self-contained: copies the C
# sources build.rs compiles (the loader, its dispatch header, the public
# header) from this symm checkout into symm-sys/csrc/ (same layout: loader/,
# abi/, include/symm/), which `cargo package` ships (Cargo.toml's include).
# csrc/ is not committed (.gitignore): inside the checkout build.rs compiles
# the checkout's own files, so the copy cannot go stale under a build there.
#   bindings/rust/symm-sys/sync_csrc.sh      (test.sh runs it before cargo package)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
rm -rf "$here/csrc"
mkdir -p "$here/csrc/loader" "$here/csrc/abi" "$here/csrc/include/symm"
cp "$src/loader/symm_loader.c" "$here/csrc/loader/"
cp "$src/abi/symm_dispatch.h" "$here/csrc/abi/"
cp "$src/include/symm/symm.h" "$here/csrc/include/symm/"
