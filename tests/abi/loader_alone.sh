#!/bin/sh
# The loader compiles alone, as bindings vendor it (cgo, Zig, a wheel):
#   cc -std=c11 -c loader/symm_loader.c -Iinclude -Iabi (abi/symm_dispatch.h: the
# loader/runtime contract)
# with each C compiler present, strict warnings as errors. A missing compiler
# is reported and skipped; a failing one fails.
root=$1
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
ran=0
for c in cc gcc clang; do
  command -v "$c" >/dev/null 2>&1 || { echo "skip: $c not found"; continue; }
  for std in c11 c17; do
    if ! "$c" -std=$std -Wall -Wextra -Werror -pedantic -c "$root/loader/symm_loader.c" \
         -I"$root/include" -I"$root/abi" -o "$out/l.o"; then
      echo "FAIL: $c -std=$std cannot compile loader/symm_loader.c alone"
      exit 1
    fi
    echo "ok: $c -std=$std"
    ran=$((ran + 1))
  done
done
[ $ran -gt 0 ] || { echo "no C compiler found"; exit 77; }
