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

# --- the server and the clients' namespaces ------------------------------------
. "$(dirname "$0")/knfsd-lib.sh"
mountpoint -q /srv/export || { mkdir -p /srv/export; mount -t tmpfs -o size=1g,mode=0777 loupe-export /srv/export; }
knfsd_start /srv/export 4
exportfs -v > "$out/exports.txt"
cat /proc/fs/nfsd/versions > "$out/nfsd-versions.txt"
say "knfsd up, versions: $(cat "$out/nfsd-versions.txt")"
i=0
for spec in "$@"; do
    i=$((i + 1)); name=${spec%%:*}
    client_netns "$i" "$name"
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
    opts=$(nfs_mount_opts "$vers")
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
knfsd_stop
names=
for spec in "$@"; do names="$names ${spec%%:*}"; done
# shellcheck disable=SC2086  # one word per client
clients_down $names
[ "$rc" -eq 0 ] && say "all clients done" || say "a client failed (see client-*.log)"
exit "$rc"
