#!/bin/sh
# /init of the Soft-RoCE guest (packed into the initramfs by image.sh).
# Brings up eth0 and rxe0, mounts the run directory (tag symmrun) and the
# host's directories at their host paths, runs /run/symm/cmd.sh with its
# output in /run/symm/out.log and its exit status in /run/symm/rc, then
# powers off. Any failure before the command is written to /run/symm/rc as
# "setup: <what>" when the run directory is mounted, and always to the
# serial console.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

say() { echo "symm-guest: $*" >/dev/console; }
off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 30
}
fail() {
  say "SETUP FAILED: $*"
  if mountpoint -q /run/symm; then
    echo "setup: $*" >/run/symm/rc
    cp /run/symm-setup.log /run/symm/setup.log 2>/dev/null
  fi
  off
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
echo 1 >/proc/sys/kernel/sysrq
exec 2>>/run/symm-setup.log

# The run directory first, so that later failures can be reported there.
modprobe -a virtio_pci 9pnet_virtio 9p || { say "cannot load 9p modules"; off; }
mkdir -p /run/symm
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 symmrun /run/symm ||
  { say "cannot mount the run directory (tag symmrun)"; off; }
[ -f /run/symm/config ] || fail "no /run/symm/config"
. /run/symm/config

# Network: qemu user-mode networking, static addresses (no DHCP client).
modprobe virtio_net || fail "modprobe virtio_net"
ip link set lo up
ip link set eth0 up || fail "no eth0"
ip addr add 10.0.2.15/24 dev eth0 || fail "ip addr on eth0"
ip route add default via 10.0.2.2 2>/dev/null

# Soft-RoCE: the crc32 shash must be there before rdma_rxe, or 'rdma link
# add' fails with "No such file or directory".
modprobe crc32_generic || fail "modprobe crc32_generic"
modprobe -a rdma_rxe ib_uverbs rdma_ucm || fail "modprobe rdma_rxe ib_uverbs rdma_ucm"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 type rxe netdev eth0"
i=0
until [ "$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)" = "4: ACTIVE" ]; do
  i=$((i + 1))
  [ $i -gt 100 ] && fail "rxe0 port 1 not ACTIVE after 10 s"
  sleep 0.1
done

# The host's directories at the same absolute paths (build trees with rpaths
# and absolute paths work unchanged).
n=0
for p in $SHARES; do
  mkdir -p "$p" || fail "mkdir $p"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "share$n" "$p" ||
    fail "cannot mount share$n at $p"
  n=$((n + 1))
done

read -r up _ </proc/uptime
echo "$up" >/run/symm/boot-s
say "rxe0 ACTIVE after $up s, running the command"
cd "$TOP" || fail "cd $TOP"
HOME=/root SYMM_SOFTROCE=1 /bin/bash /run/symm/cmd.sh >/run/symm/out.log 2>&1 </dev/null
echo $? >/run/symm/rc.tmp
mv /run/symm/rc.tmp /run/symm/rc
read -r up _ </proc/uptime
say "command finished at $up s (status $(cat /run/symm/rc))"
off
