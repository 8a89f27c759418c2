#!/usr/bin/env bash
# Run a command inside a qemu guest with a Soft-RoCE device (rxe0 on eth0).
#   scripts/softroce/guest-run.sh [--timeout SEC] [--share DIR]... -- CMD [ARG]...
#   scripts/softroce/guest-run.sh [--timeout SEC] --self-test
#   scripts/softroce/guest-run.sh --build-only
# The checkout this script belongs to (the directory holding scripts/) is
# mounted with 9p at the same absolute path inside the guest, as is every
# --share DIR; CMD runs from that directory with SYMM_SOFTROCE=1 and every
# SYMM_* variable of the caller, as root. Its output is copied to stdout and
# the script exits with CMD's status. When the guest cannot run (tools
# missing, image build failed, boot failed, timeout) it says why, shows the
# guest console's tail, and exits non-zero (125; 124 on timeout).
# SYMM_SOFTROCE_CONSOLE=FILE keeps a copy of the guest's serial console.
# The image is built once and cached under
# ${SYMM_SOFTROCE_CACHE:-$HOME/.cache/symm-softroce}/<hash of the recipe>.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

die() { echo "guest-run: FAILED: $*" >&2; exit 125; }
usage() { sed -n '2,5p' "$0" | sed 's/^# *//' >&2; exit 2; }

timeout_s=900
self_test=0
build_only=0
shares=()
while [ $# -gt 0 ]; do
  case $1 in
    --timeout) [ $# -ge 2 ] || usage; timeout_s=$2; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --share) [ $# -ge 2 ] || usage; shares+=("$2"); shift 2 ;;
    --self-test) self_test=1; shift ;;
    --build-only) build_only=1; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "guest-run: unknown option '$1'" >&2; usage ;;
  esac
done
case $timeout_s in ''|*[!0-9]*) die "--timeout wants whole seconds, got '$timeout_s'" ;; esac
if [ $self_test = 1 ]; then
  [ $# -eq 0 ] || die "--self-test takes no command"
  set -- scripts/softroce/self-test.sh
fi
[ $# -gt 0 ] || [ $build_only = 1 ] || usage

# ---- host tools (installed when missing and we are root)
host_deps() {
  local need=() pkgs=()
  command -v qemu-system-x86_64 >/dev/null || { need+=(qemu-system-x86_64); pkgs+=(qemu-system-x86); }
  command -v debootstrap >/dev/null || { need+=(debootstrap); pkgs+=(debootstrap); }
  command -v cpio >/dev/null || { need+=(cpio); pkgs+=(cpio); }
  command -v zstd >/dev/null || { need+=(zstd); pkgs+=(zstd); }
  command -v depmod >/dev/null || [ -x /sbin/depmod ] || { need+=(depmod); pkgs+=(kmod); }
  command -v flock >/dev/null || { need+=(flock); pkgs+=(util-linux); }
  [ ${#pkgs[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    die "missing ${need[*]}; not root (or no apt-get), cannot install: apt-get install --no-install-recommends ${pkgs[*]}"
  fi
  echo "guest-run: installing ${pkgs[*]}" >&2
  local log=/tmp/symm-softroce-apt.log
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >"$log" 2>&1; then
    apt-get update -q >>"$log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>"$log" 2>&1 ||
      { tail -n 15 "$log" >&2; die "apt-get install ${pkgs[*]} failed (log: $log)"; }
  fi
  hash -r
  command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 still missing after apt-get"
}
export PATH=$PATH:/usr/sbin:/sbin
host_deps

# ---- image (cached by recipe hash; one builder at a time)
# base/<hash of image-base.sh>: kernel package + debootstrap root (slow part);
# <hash of all three recipe files>: the initramfs the guest boots.
cache=${SYMM_SOFTROCE_CACHE:-$HOME/.cache/symm-softroce}
base_key=$(sha256sum <"$here/image-base.sh" | cut -c1-16)
key=$(cat "$here/image-base.sh" "$here/image.sh" "$here/guest-init.sh" | sha256sum | cut -c1-16)
base=$cache/base/$base_key
img=$cache/img/$key
mkdir -p "$cache/base" "$cache/img" || die "cannot create the cache directory $cache"
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$img/initrd.cpio" ]; then
  [ "$(id -u)" = 0 ] || die "building the guest image needs root (debootstrap, device nodes); none cached in $cache"
  if [ ! -f "$base/kernel-version" ]; then
    # apt must know the kernel package; refresh its lists once when it does not.
    if ! apt-cache depends linux-image-amd64 2>/dev/null | grep -q 'Depends: linux-image-[0-9]'; then
      apt-get update -q >/tmp/symm-softroce-apt.log 2>&1 ||
        die "apt-get update failed (log: /tmp/symm-softroce-apt.log)"
    fi
    echo "guest-run: building the guest base $base (first time: kernel + debootstrap, minutes)" >&2
    t0=$SECONDS
    rm -rf "$base"
    bash "$here/image-base.sh" "$base" >&2 || { rm -rf "$base"; die "building the guest base failed (see above)"; }
    echo "guest-run: base built in $((SECONDS - t0)) s" >&2
  fi
  echo "guest-run: building the guest initramfs $img" >&2
  t0=$SECONDS
  rm -rf "$img"
  bash "$here/image.sh" "$base" "$img" >&2 || { rm -rf "$img"; die "building the guest initramfs failed (see above)"; }
  echo "guest-run: initramfs built in $((SECONDS - t0)) s" >&2
fi
# Entries unused for a week go: other checkouts (branches) on the same machine
# may use other recipes at the same time, so the cache keeps several.
touch "$img/.used"; [ -d "$base" ] && touch "$base/.used"
for d in "$cache"/base/*/ "$cache"/img/*/; do
  d=${d%/} stamp=${d%/}/.used
  [ -d "$d" ] || continue
  [ -e "$stamp" ] || stamp=$d
  [ -n "$(find "$stamp" -maxdepth 0 -mtime -7 2>/dev/null)" ] || rm -rf "$d"
done
flock -u 9
exec 9>&-
[ $build_only = 1 ] && { echo "guest-run: image ready: $img"; exit 0; }

# ---- run directory: config, command, output, status
run=$(mktemp -d "${TMPDIR:-/tmp}/symm-softroce.XXXXXX") || die "mktemp failed"
qpid=
cleanup() {
  # qpid is timeout(1), which passes TERM on to qemu; qemu's own pid from its
  # pidfile covers the case where timeout is gone first.
  local qemu_pid=
  [ -s "$run/qemu.pid" ] && read -r qemu_pid <"$run/qemu.pid"
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
    kill -TERM "$qpid" 2>/dev/null; sleep 1; kill -KILL "$qpid" 2>/dev/null
  fi
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null &&
     grep -q qemu "/proc/$qemu_pid/cmdline" 2>/dev/null; then
    kill -KILL "$qemu_pid" 2>/dev/null
  fi
  [ -n "${tpid:-}" ] && kill "$tpid" 2>/dev/null
  rm -rf "$run"
}
trap cleanup EXIT
trap 'echo "guest-run: interrupted" >&2; exit 130' INT TERM HUP

share_dirs=("$top")
for s in "${shares[@]+"${shares[@]}"}"; do
  s=$(cd "$s" 2>/dev/null && pwd) || die "--share: no directory $s"
  case "$s/" in "$top"/*) continue ;; esac  # already inside the checkout
  share_dirs+=("$s")
done
for s in "${share_dirs[@]}"; do
  case $s in *[[:space:]]*|*[\'\"\\\$\`]*) die "cannot share a path with blanks or quotes: $s" ;; esac
done
{
  echo "TOP=$top"
  echo "SHARES=\"${share_dirs[*]}\""
} >"$run/config"
{
  echo "cd $(printf %q "$top") || exit 125"
  env | grep -E '^SYMM_[A-Za-z0-9_]*=' | grep -v '^SYMM_SOFTROCE_CACHE=' |
    while IFS='=' read -r k v; do printf 'export %s=%q\n' "$k" "$v"; done
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} >"$run/cmd.sh"
: >"$run/out.log"

# ---- boot
if grep -qE '\b(vmx|svm)\b' /proc/cpuinfo && [ -w /dev/kvm ]; then
  accel=(-accel kvm -cpu host)
else
  accel=(-accel tcg,thread=multi -cpu max)   # /dev/kvm without vmx/svm is not usable
fi
virtfs=(-virtfs "local,path=$run,mount_tag=symmrun,security_model=none,id=symmrun")
n=0
for s in "${share_dirs[@]}"; do
  virtfs+=(-virtfs "local,path=$s,mount_tag=share$n,security_model=none,id=share$n")
  n=$((n + 1))
done
kernel=$img/vmlinuz
[ -f "$img/vmlinux" ] && kernel=$img/vmlinux   # PVH entry: boots much faster under TCG
t0=$SECONDS
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 "${accel[@]}" -m 2G -smp 2 \
  -nodefaults -no-reboot -display none -monitor none -serial "file:$run/console.log" \
  -pidfile "$run/qemu.pid" \
  -kernel "$kernel" -initrd "$img/initrd.cpio" \
  -append "console=ttyS0 panic=-1 quiet loglevel=4 mitigations=off" \
  -netdev user,id=n0 -device virtio-net-pci,netdev=n0 "${virtfs[@]}" \
  </dev/null >"$run/qemu.log" 2>&1 &
qpid=$!
tail -n +1 -F --pid="$qpid" -s 0.5 "$run/out.log" 2>/dev/null &
tpid=$!
wait "$qpid"
qrc=$?
qpid=
wait "$tpid" 2>/dev/null
tpid=
elapsed=$((SECONDS - t0))
[ -n "${SYMM_SOFTROCE_CONSOLE:-}" ] && cp "$run/console.log" "$SYMM_SOFTROCE_CONSOLE"

guest_tail() {
  echo "---- guest console (last 30 lines) ----" >&2
  tail -n 30 "$run/console.log" >&2 2>/dev/null
  [ -s "$run/setup.log" ] && { echo "---- guest setup log ----" >&2; tail -n 20 "$run/setup.log" >&2; }
  [ -s "$run/qemu.log" ] && { echo "---- qemu ----" >&2; tail -n 10 "$run/qemu.log" >&2; }
  echo "----" >&2
}
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  guest_tail
  echo "guest-run: FAILED: the guest ran past --timeout $timeout_s s and was stopped" >&2
  exit 124
fi
rc=$(cat "$run/rc" 2>/dev/null)
case $rc in
  ''|*[!0-9]*)
    guest_tail
    if [ -n "$rc" ]; then die "guest ${rc} (qemu exit $qrc)"; fi
    die "the guest ended without a command status (qemu exit $qrc)" ;;
esac
boot=$(cat "$run/boot-s" 2>/dev/null)
echo "guest-run: command exited $rc (qemu ${elapsed} s in all, guest kernel up to command ${boot:-?} s, $([ "${accel[1]}" = kvm ] && echo KVM || echo TCG))" >&2
exit "$rc"
