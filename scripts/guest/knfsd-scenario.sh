#!/bin/sh
# In the test guest: the kernel NFS server (knfsd) exports a tmpfs to NFS clients,
# each in its own network namespace on a bridge, and each runs fio on its mount.
#
#   knfsd-scenario.sh OUT_DIR CLIENT...       CLIENT = name:version:size:bs
#   e.g. knfsd-scenario.sh /job c1:3:8M:16k c2:4.2:16M:64k
#
# Client i gets 10.99.0.(10+i)/24, the server 10.99.0.1 on bridge lnfs0. Every
# client mounts 10.99.0.1:/srv/export (v3 with nolock: no lock manager here) and,
# all at once, writes then reads back its own file with fio --direct=1 (so every
# fio I/O is one NFS WRITE/READ), fio's JSON going to OUT_DIR/fio-<name>-write.json
# and fio-<name>-read.json. Two fio runs, not two jobs of one: fio lays out a read
# job's file before any job starts, with WRITEs it does not report; and
# --fallocate=none since glibc emulates posix_fallocate on NFSv3 by writing blocks.
# Also written: mount-<name>.txt (the client's /proc/mounts line), nfsd-before.txt
# and nfsd-after.txt (/proc/net/rpc/nfsd), exports.txt.
#
# Optional, for probe tests: LOUPE_BACKGROUND, a shell command started before the
# clients (output in OUT_DIR/background.log), given LOUPE_BACKGROUND_WARMUP seconds
# (default 3) to start, or, with LOUPE_BACKGROUND_READY, until it creates that
# file (at most the warm-up), and LOUPE_BACKGROUND_SETTLE seconds (default 3) after
# fio ends, then stopped with SIGTERM; its exit status goes to OUT_DIR/background.rc.
set -eu
out=$1; shift
[ "$#" -ge 1 ] || { echo "usage: $0 OUT_DIR name:version:size:bs..." >&2; exit 64; }
say() { echo "knfsd-scenario: $*"; }

# --- the server ---------------------------------------------------------------
modprobe nfsd
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
# Before rpc.nfsd starts: otherwise NFSv4 sits in its 90 s grace period and v4
# mounts/opens stall until it ends.
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/fs/nfsd/nfsv4leasetime
mkdir -p /srv/export /run/rpcbind /var/lib/nfs
mountpoint -q /srv/export || mount -t tmpfs -o size=1g,mode=0777 loupe-export /srv/export
rpcbind -w
exportfs -o rw,sync,fsid=1,no_root_squash,no_subtree_check,insecure 10.99.0.0/24:/srv/export
exportfs -v > "$out/exports.txt"
rpc.mountd
rpc.nfsd 4
cat /proc/fs/nfsd/versions > "$out/nfsd-versions.txt"
say "knfsd up, versions: $(cat "$out/nfsd-versions.txt")"

# --- the network: one bridge, one namespace per client -----------------------
ip link add lnfs0 type bridge
ip addr add 10.99.0.1/24 dev lnfs0
ip link set lnfs0 up
i=0
for spec in "$@"; do
    i=$((i + 1)); name=${spec%%:*}
    ip netns add "$name"
    ip link add "lnfs-$name" type veth peer name eth0 netns "$name"
    ip link set "lnfs-$name" master lnfs0 up
    ip -n "$name" addr add "10.99.0.$((10 + i))/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" link set lo up
    mkdir -p "/srv/export/$name"
done

# --- the optional background command (e.g. the Loupe agent) -------------------
bg_pid=
if [ -n "${LOUPE_BACKGROUND:-}" ]; then
    sh -c "$LOUPE_BACKGROUND" > "$out/background.log" 2>&1 &
    bg_pid=$!
    say "background command started, pid $bg_pid"
    if [ -n "${LOUPE_BACKGROUND_READY:-}" ]; then
        n=0; w=${LOUPE_BACKGROUND_WARMUP:-3}; w=${w%.*}
        while [ ! -e "$LOUPE_BACKGROUND_READY" ] && kill -0 "$bg_pid" 2>/dev/null && [ "$n" -lt "$w" ]; do
            sleep 1; n=$((n + 1))
        done
        say "background command ready after $n s: $(ls "$LOUPE_BACKGROUND_READY" 2>&1)"
    else
        sleep "${LOUPE_BACKGROUND_WARMUP:-3}"
    fi
fi

cat /proc/net/rpc/nfsd > "$out/nfsd-before.txt"

# --- the clients, all at once -------------------------------------------------
# `ip netns exec` gives each command its own mount namespace, so mount, fio and
# umount must run in the same one.
i=0; pids=
for spec in "$@"; do
    i=$((i + 1))
    IFS=: read -r name vers size bs <<EOF
$spec
EOF
    opts="vers=$vers,proto=tcp,hard,timeo=600"
    [ "$vers" = 3 ] && opts="$opts,nolock"
    ip netns exec "$name" sh -c "
        set -e
        mkdir -p /mnt/loupe-nfs
        mount -t nfs -o $opts 10.99.0.1:/srv/export /mnt/loupe-nfs
        grep ' /mnt/loupe-nfs ' /proc/mounts > '$out/mount-$name.txt'
        rc=0
        for rw in write read; do
            fio --output-format=json --output='$out/fio-$name-'\$rw.json \
                --directory=/mnt/loupe-nfs/$name --filename=data --size=$size --bs=$bs \
                --direct=1 --ioengine=psync --fallocate=none --name=\$rw --rw=\$rw || rc=\$?
        done
        umount /mnt/loupe-nfs
        exit \$rc
    " > "$out/client-$name.log" 2>&1 &
    pids="$pids $!"
    say "client $name (10.99.0.$((10 + i)), NFSv$vers, $size in $bs blocks) started"
done
rc=0
for pid in $pids; do
    wait "$pid" || rc=1
done
cat /proc/net/rpc/nfsd > "$out/nfsd-after.txt"
for spec in "$@"; do
    name=${spec%%:*}
    if [ -s "$out/client-$name.log" ]; then say "client $name said:"; cat "$out/client-$name.log"; fi
done

if [ -n "$bg_pid" ]; then
    sleep "${LOUPE_BACKGROUND_SETTLE:-3}"
    kill -TERM "$bg_pid" 2>/dev/null || true
    n=0
    while kill -0 "$bg_pid" 2>/dev/null && [ "$n" -lt 20 ]; do sleep 0.5; n=$((n + 1)); done
    kill -KILL "$bg_pid" 2>/dev/null || true
    brc=0; wait "$bg_pid" || brc=$?
    echo "$brc" > "$out/background.rc"
    say "background command stopped (exit $brc)"
fi

# --- tear down ----------------------------------------------------------------
rpc.nfsd 0
exportfs -ua
for spec in "$@"; do ip netns del "${spec%%:*}"; done
ip link del lnfs0
[ "$rc" -eq 0 ] && say "all clients done" || say "a client failed (see client-*.log)"
exit "$rc"
