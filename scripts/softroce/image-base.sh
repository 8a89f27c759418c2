#!/usr/bin/env bash
# The Soft-RoCE guest's base: the stock Debian 12 kernel package (extracted,
# not installed) and a trimmed minbase bookworm root file system.
#   bash scripts/softroce/image-base.sh OUTDIR
# Writes OUTDIR/{kernel/,root/,kernel-version}. guest-run.sh caches it under a
# hash of this file; image.sh turns it into the initramfs. Downloads only
# through apt-get and debootstrap, from the mirror the host's apt already uses.
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: image-base.sh OUTDIR}
mkdir -p "$out"
work=$(mktemp -d "${out%/}/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'echo "softroce-base: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

# Packages of the guest: verbs tools and what symm's binaries load at run time
# (libc, libibverbs + the rxe provider, libfabric1 for the ofi transport's
# verbs;ofi_rxm); no python, no compiler.
GUEST_PKGS=rdma-core,ibverbs-providers,ibverbs-utils,perftest,iproute2,kmod,procps,libfabric1

step() { printf 'softroce-base: %s (%ds)\n' "$*" "$SECONDS"; }

# The Debian mirror apt already uses for bookworm main (deb822 or one-line
# sources); never a host name written into the repository.
apt_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
      { uri = ""; suites = ""; types = ""; comps = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) uri = $i; if ($i ~ /^Suites:/) suites = $i
          if ($i ~ /^Types:/) types = $i; if ($i ~ /^Components:/) comps = $i }
        if (types ~ /[ \t]deb([ \t]|$)/ && suites ~ /[ \t]bookworm([ \t]|$)/ && comps ~ /main/) {
          sub(/^URIs:[ \t]*/, "", uri); split(uri, u, /[ \t]+/); print u[1]; exit } }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                       if ($(i + 1) == "bookworm") { print $i; exit } }' "$f"
  done
}
mirror=$(apt_mirror | sed -n 1p)
if [ -z "$mirror" ]; then
  echo "softroce-base: no 'deb ... bookworm main' source found in apt's sources" >&2
  exit 1
fi
step "mirror from apt sources: $mirror"

# ---- kernel: the package linux-image-amd64 points at, extracted, not installed
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
       awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [ -z "$kpkg" ]; then
  echo "softroce-base: apt-cache does not know linux-image-amd64 (apt-get update?)" >&2
  exit 1
fi
step "kernel package $kpkg (downloaded while debootstrap runs)"
kver=${kpkg#linux-image-}
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root "$kpkg" >"$work/kernel-dl.log" 2>&1 &&
 dpkg -x "$work"/"$kpkg"_*.deb "$work/kernel" && rm -f "$work"/"$kpkg"_*.deb) &
kjob=$!

# ---- root file system
step "debootstrap minbase bookworm (+ $GUEST_PKGS)"
if ! debootstrap --variant=minbase --include="$GUEST_PKGS" bookworm "$work/root" "$mirror" \
    >"$work/debootstrap.log" 2>&1; then
  echo "softroce-base: debootstrap failed; last lines of its log:" >&2
  tail -n 20 "$work/debootstrap.log" >&2
  tail -n 20 "$work/root/debootstrap/debootstrap.log" >&2 2>/dev/null || true
  wait $kjob
  exit 1
fi
if ! wait $kjob || [ ! -d "$work/kernel/lib/modules/$kver" ]; then
  echo "softroce-base: could not download or extract $kpkg:" >&2
  tail -n 5 "$work/kernel-dl.log" >&2
  exit 1
fi
step "kernel $kver extracted"
r=$work/root
# Trim what a test guest never reads.
rm -rf "$r"/usr/share/{doc,man,info,locale,i18n,lintian,linda,zoneinfo,bash-completion} \
       "$r"/var/cache/apt/* "$r"/var/lib/apt/lists/* "$r"/var/log/* "$r"/debootstrap \
       "$r"/usr/lib/x86_64-linux-gnu/gconv "$r"/usr/share/perl5 "$r"/usr/lib/x86_64-linux-gnu/perl-base \
       "$r"/usr/share/common-licenses "$r"/lib/udev/hwdb.d "$r"/etc/udev/hwdb.bin "$r"/usr/share/mime \
       "$r"/usr/lib/udev/hwdb.bin "$r"/usr/lib/udev/hwdb.d "$r"/var/lib/dpkg/info "$r"/usr/bin/perl* \
       "$r"/usr/lib/apt "$r"/usr/bin/apt* "$r"/usr/lib/x86_64-linux-gnu/libapt-* "$r"/usr/bin/gpgv \
       "$r"/usr/share/debconf "$r"/var/cache/debconf "$r"/usr/lib/x86_64-linux-gnu/security

depmod -b "$work/kernel" "$kver"
echo "$kver" >"$work/kernel-version"
mv "$work/kernel" "$work/root" "$work/kernel-version" "$out/"
step "done: root $(du -sh "$out/root" | cut -f1)"
