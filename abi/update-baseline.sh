#!/bin/sh
# Record the ABI baseline (abi/libsymm.abi, abi/libsymm_runtime.abi) from a
# build, on purpose: after a change docs/ABI.md allows (an appended dispatch
# entry or struct field, with SYMM_VERSION_MINOR and SYMM_ABI_MINOR bumped),
# or to record the first baseline. Review the diff of abi/*.abi before
# committing it: every line that changed is a change users' binaries see.
#
#   abi/update-baseline.sh [BUILD_DIR] [libsymm|libsymm_runtime]...
#
# BUILD_DIR defaults to ./build; it needs debug info (the default buildtype,
# debugoptimized, has it). Without library names both are recorded.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
libs=${*:-libsymm libsymm_runtime}

[ -d "$build" ] || { echo "update-baseline: no build directory $build" >&2; exit 1; }
for lib in $libs; do
  case $lib in
    libsymm) target=symm; so=$build/loader/libsymm.so.1 ;;
    libsymm_runtime) target=symm_runtime; so=$build/runtime/libsymm_runtime.so.1 ;;
    *) echo "update-baseline: unknown library $lib" >&2; exit 1 ;;
  esac
  meson compile -C "$build" "$target" >/dev/null
  python3 "$root/abi/abi_baseline.py" update "$lib" "$so"
done
git -C "$root" --no-pager diff --stat -- abi/ 2>/dev/null || true
