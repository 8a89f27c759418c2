#!/usr/bin/env bash
# The Soft-RoCE guest image: the base (image-base.sh) plus the kernel modules
# the guest loads and guest-init.sh as /init, packed as one uncompressed newc
# initramfs.
#   bash scripts/softroce/image.sh BASEDIR OUTDIR
# Writes OUTDIR/{vmlinuz,vmlinux,initrd.cpio,kernel-version}. guest-run.sh caches it
# under a hash of image-base.sh, this file and guest-init.sh.
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
base=${1:?usage: image.sh BASEDIR OUTDIR}
out=${2:?usage: image.sh BASEDIR OUTDIR}
mkdir -p "$out"
work=$(mktemp -d "${out%/}/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'echo "softroce-image: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
export PATH=$PATH:/usr/sbin:/sbin

# Kernel modules the guest loads (their dependencies come along).
GUEST_MODS="virtio_pci virtio_net 9pnet_virtio 9p crc32_generic rdma_rxe ib_uverbs rdma_ucm"

step() { printf 'softroce-image: %s (%ds)\n' "$*" "$SECONDS"; }
kver=$(cat "$base/kernel-version")
step "copy the base root"
cp -a "$base/root" "$work/root"
r=$work/root
k=$base/kernel

# libibverbs dlopens every provider listed in /etc/libibverbs.d when it first
# lists devices; under TCG that costs every verbs program seconds. Only rxe.
for f in "$r"/etc/libibverbs.d/*.driver; do
  [ "$(basename "$f")" = rxe.driver ] || rm -f "$f"
done
find "$r"/usr/lib/x86_64-linux-gnu/libibverbs -name '*-rdmav*.so' ! -name 'librxe-*' -delete
[ -f "$r/etc/libibverbs.d/rxe.driver" ] || { echo "softroce-image: no rxe provider in the base" >&2; exit 1; }

# ---- modules: only what the guest loads, with their dependencies
step "modules"
[ -f "$k/lib/modules/$kver/modules.dep" ] || depmod -b "$k" "$kver"
kmods=$(for m in $GUEST_MODS; do
          modprobe -d "$k" -S "$kver" --show-depends "$m" || exit 1
        done | awk '$1 == "insmod" { print $2 }' | sort -u)
for m in $kmods; do
  rel=${m#"$k"}
  mkdir -p "$r$(dirname "$rel")"
  cp "$m" "$r$rel"
done
cp "$k/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$r/lib/modules/$kver/"
depmod -b "$r" "$kver"

# ---- init and packing
install -m 0755 "$here/guest-init.sh" "$r/init"
step "cpio"
(cd "$r" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$work/initrd.cpio"
echo "$kver" >"$work/kernel-version"
cp "$k/boot/vmlinuz-$kver" "$work/vmlinuz"
# The uncompressed kernel inside the bzImage boots through its PVH entry
# (qemu -kernel with an ELF file): no real-mode setup and no decompression
# under TCG, about 15-20 s less per boot. guest-run.sh uses it when present.
python3 - "$work/vmlinuz" "$work/vmlinux" <<'PY' && step "PVH vmlinux extracted" || rm -f "$work/vmlinux"
import lzma, struct, sys
data = open(sys.argv[1], 'rb').read()
at = data.find(b'\xfd7zXZ\x00')
if at < 0:
    sys.exit('no xz payload in the bzImage')
elf = lzma.LZMADecompressor().decompress(data[at:])
# ELF64 note of owner "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY): the PVH entry.
notes = [struct.pack('<III', 4, n, 18) + b'Xen\x00' for n in (4, 8)]
if elf[:4] != b'\x7fELF' or not any(n in elf for n in notes):
    sys.exit('vmlinux has no PVH entry note')
open(sys.argv[2], 'wb').write(elf)
PY
[ -f "$work/vmlinux" ] && mv -f "$work/vmlinux" "$out/"
mv -f "$work/vmlinuz" "$work/initrd.cpio" "$work/kernel-version" "$out/"
step "done: $(du -sh "$out/initrd.cpio" | cut -f1) initramfs, kernel $kver"
