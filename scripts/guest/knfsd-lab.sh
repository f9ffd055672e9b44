#!/bin/sh
# In the knfsd guest, for `loupe lab --nfs-server knfsd` (backend/loupe/lab/knfsd.py), which
# writes the plan into LAB (the job folder) before the guest boots and then steps through it:
#
#   knfsd-lab.sh LAB
#
# LAB/clients      one line per client: NAME NFS-VERSION (client i gets 10.99.0.(10+i))
# LAB/N.step       workload N, sourced: workload=NAME cold=0|1 prep=0|1 clients="NAME..."
# LAB/N-NAME.fio   the fio job file client NAME runs in workload N
# LAB/agent.sh     optional: the Loupe agent's command, started as soon as nfsd is loaded
#
# knfsd exports an ext4 on /dev/vdb (the root file system when there is no such disk), so that
# a cold read comes from a disk. Each client mounts it from its own network namespace, at
# /mnt/NAME (only the network namespace: the mount is visible outside, where fio runs, and its
# traffic leaves from the client's address), and uses NAME/ below it. The files of every
# workload with prep=1 are laid out (fio --create_only) before anything is measured.
#
# Then, per workload N: the guest writes N.ready (caches dropped first when cold=1), waits for
# the host's N.go, runs every client's fio at once, fio's JSON to N-NAME.json, and writes N.done
# ("NAME EXIT" lines) when all have finished. It ends when the host writes "end" (from then on
# nothing more is measured): agent stopped, clients unmounted, knfsd stopped. Progress lines
# for the host go to LAB/progress.
set -u
lab=$1
. "$(dirname "$0")/knfsd-lib.sh"
say() { echo "$*" >> "$lab/progress"; echo "knfsd-lab: [$(cut -d" " -f1 /proc/uptime) s] $*"; }
fail() { say "ERROR: $*"; exit 1; }
# wait_for FILE: until the host writes FILE (true) or "end" (false)
wait_for() {
    while [ ! -e "$1" ] && [ ! -e "$lab/end" ]; do sleep 0.2; done
    [ -e "$1" ]
}

export_dir=/srv/lab
mkdir -p "$export_dir"
if [ -b /dev/vdb ]; then
    mount /dev/vdb "$export_dir" || fail "cannot mount the lab's disk /dev/vdb"
fi
chmod 0777 "$export_dir"
# The agent once nfsd is loaded (its probe looks for nfsd's tracepoints when it starts), and
# first: loading and verifying its BPF programs is the slowest part of setting up under TCG.
modprobe nfsd
agent=
if [ -f "$lab/agent.sh" ]; then
    sh "$lab/agent.sh" > "$lab/agent.log" 2>&1 &
    agent=$!
    say "Loupe agent started (pid $agent)"
fi

knfsd_start "$export_dir" 8 > "$lab/knfsd.log" 2>&1 || fail "knfsd did not start: $(tail -n 5 "$lab/knfsd.log")"
say "knfsd up (NFS versions $(cat /proc/fs/nfsd/versions)), exporting $export_dir"

# lay_out NAME: the files of the workloads (prep=1) client NAME runs, as fio lays them out
lay_out() {
    k=1
    while [ -f "$lab/$k.step" ]; do
        . "$lab/$k.step"
        mkdir -p "$export_dir/$1/$k"
        case " $clients " in
            *" $1 "*) if [ "$prep" = 1 ]; then
                          fio --create_only=1 "$lab/$k-$1.fio" > "$lab/$k-$1.prep.log" 2>&1 || return 1
                      fi ;;
        esac
        k=$((k + 1))
    done
}

# Every client at once: its namespace, its mount, then its files.
names=
i=0
pids=
while read -r name vers; do
    i=$((i + 1))
    names="$names $name"
    client_netns "$i" "$name" || fail "client $name: no network namespace"
    mkdir -p "$export_dir/$name" "/mnt/$name"
    (
        nsenter --net="/run/netns/$name" mount -t nfs -o "$(nfs_mount_opts "$vers")" \
            "10.99.0.1:$export_dir" "/mnt/$name" || { say "ERROR: client $name: the NFSv$vers mount failed"; exit 1; }
        grep " /mnt/$name " /proc/mounts > "$lab/mount-$name.txt"
        say "client $name at 10.99.0.$((10 + i)) mounted NFSv$vers"
        lay_out "$name" || { say "ERROR: client $name: laying out its files failed (see *-$name.prep.log)"; exit 1; }
    ) < /dev/null &
    pids="$pids $!"
done < "$lab/clients"
for p in $pids; do
    wait "$p" || fail "a client could not mount or lay out its files"
done
sync
say "files laid out"

touch "$lab/up"

n=1
while [ -f "$lab/$n.step" ]; do
    . "$lab/$n.step"
    if [ "$cold" = 1 ]; then
        sync
        echo 3 > /proc/sys/vm/drop_caches
    fi
    touch "$lab/$n.ready"
    wait_for "$lab/$n.go" || break
    pids=
    for c in $clients; do
        fio --output-format=json --output="$lab/$n-$c.json" "$lab/$n-$c.fio" > "$lab/$n-$c.log" 2>&1 &
        pids="$pids $c:$!"
    done
    : > "$lab/$n.done.tmp"
    for cp in $pids; do
        rc=0
        wait "${cp#*:}" || rc=$?
        echo "${cp%%:*} $rc" >> "$lab/$n.done.tmp"
    done
    mv "$lab/$n.done.tmp" "$lab/$n.done"
    n=$((n + 1))
done
wait_for "$lab/end"

if [ -n "$agent" ]; then
    kill -TERM "$agent" 2>/dev/null
    k=0
    while kill -0 "$agent" 2>/dev/null && [ "$k" -lt 20 ]; do sleep 0.5; k=$((k + 1)); done
    kill -KILL "$agent" 2>/dev/null
fi
# shellcheck disable=SC2086  # one word per client
for name in $names; do umount "/mnt/$name"; done
knfsd_stop
# shellcheck disable=SC2086
clients_down $names
say "lab torn down"
exit 0
