#!/bin/sh
# PID 1 of the knfsd test guest (installed as /usr/local/sbin/loupe-guest-init by
# build-image.sh). No init system: mount what the job needs, bring up QEMU's user
# network, mount the host's shares, run /job/job.sh, report its exit code, power off.
#
# Shares (9p, virtio): "repo" = the Loupe checkout, read-only, at /repo;
# "job" = a per-run host folder, read-write, at /job (job.sh in, results out).
# The host reads "LOUPE-GUEST-EXIT <rc>" on the serial console and /job/exit-code.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

say() { echo "loupe-guest-init: $*"; }

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mkdir -p /run/netns /run/lock /var/lib/nfs/v4recovery
hostname loupe-guest

# QEMU user networking: we are 10.0.2.15, the host's loopback answers at 10.0.2.2.
# No udev here: load the NIC's driver ourselves.
modprobe virtio_net
ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 \
    || say "WARNING: eth0 not configured; the host is unreachable"

rc=0
modprobe 9pnet_virtio && modprobe 9p || { say "9p modules missing"; rc=70; }
mkdir -p /repo /job
mount -t 9p -o trans=virtio,version=9p2000.L,ro repo /repo || { say "cannot mount the repo share"; rc=70; }
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /job || { say "cannot mount the job share"; rc=70; }

if [ "$rc" -eq 0 ]; then
    if [ -f /job/job.sh ]; then
        say "running /job/job.sh ($(cut -d" " -f1 /proc/uptime) s after boot)"
        (cd /job && exec sh /job/job.sh)
        rc=$?
    else
        say "no /job/job.sh to run"
        rc=71
    fi
fi
echo "$rc" > /job/exit-code 2>/dev/null
sync
echo "LOUPE-GUEST-EXIT $rc"
umount /job 2>/dev/null
# sysrq works for root whatever kernel.sysrq says; the root disk is a throw-away snapshot.
echo o > /proc/sysrq-trigger
sleep 30
