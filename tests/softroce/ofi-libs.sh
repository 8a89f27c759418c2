#!/usr/bin/env bash
# Copies the host's libfabric.so.1 and the libraries it needs that the
# Soft-RoCE guest's packages lack (scripts/softroce/image-base.sh installs
# rdma-core, ibverbs-providers and their dependencies, not libfabric1) into
# OUTDIR, for the guest to open through SYMM_OFI_LIBRARY and
# LD_LIBRARY_PATH. Host and guest are the same Debian 12, so the host's
# build runs there unchanged. Writes OUTDIR/STAMP last.
#   bash tests/softroce/ofi-libs.sh OUTDIR STAMP
set -eu
out=${1:?usage: ofi-libs.sh OUTDIR STAMP}
stamp=${2:?usage: ofi-libs.sh OUTDIR STAMP}
ldc=$(command -v ldconfig || echo /sbin/ldconfig)
lib=$("$ldc" -p | awk '/libfabric\.so\.1 .*x86-64/ { print $NF; exit }')
[ -n "$lib" ] || { echo "ofi-libs: libfabric.so.1 not found (apt-get install libfabric1)" >&2; exit 1; }
mkdir -p "$out"
cp -L "$lib" "$out/libfabric.so.1"
# What the guest has already: libc, rdma-core's libraries and theirs.
skip='^(libc|ld-linux-x86-64|libibverbs|librdmacm|libefa|libmlx[0-9]|libnl-3|libnl-route-3|libuuid|libpthread|libdl|libm)\.'
ldd "$lib" | awk '/=> \// { print $1, $3 }' | while read -r name path; do
  if ! [[ $name =~ $skip ]]; then cp -L "$path" "$out/$name"; fi
done
ls "$out" >"$stamp"
