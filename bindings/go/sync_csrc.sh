#!/usr/bin/env bash
# Makes a copy of this module self-contained: copies the C sources it compiles
# in (the loader, its dispatch header and the public header) from this symm
# checkout into DIR/csrc/. Inside the checkout nothing is copied: cgo finds
# them at ../../loader and ../../include (errors.go's include path lists
# csrc/ first, so a vendored copy uses its own).
#   bindings/go/sync_csrc.sh DIR    DIR: a copy of bindings/go (vendored, say)
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
dir=${1:?usage: sync_csrc.sh DIR (a copy of bindings/go to make self-contained)}
mkdir -p "$dir/csrc/symm" || exit 1
cp "$src/loader/symm_loader.c" "$src/abi/symm_dispatch.h" "$dir/csrc/" &&
  cp "$src/include/symm/symm.h" "$dir/csrc/symm/"
