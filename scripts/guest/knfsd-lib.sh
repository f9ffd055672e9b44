# In the test guest, sourced by knfsd-scenario.sh and knfsd-lab.sh: the kernel NFS server
# (knfsd) exporting a folder to 10.99.0.0/24, and its clients, each in its own network
# namespace on bridge lnfs0 (the server is 10.99.0.1, client i is 10.99.0.(10+i)).

# knfsd_start DIR NTHREADS: export DIR (made if missing) over NFSv3 and NFSv4.x.
knfsd_start() {
    modprobe nfsd
    mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
    # Before rpc.nfsd starts: otherwise NFSv4 sits in its 90 s grace period and v4
    # mounts/opens stall until it ends.
    echo 10 > /proc/fs/nfsd/nfsv4gracetime
    echo 10 > /proc/fs/nfsd/nfsv4leasetime
    mkdir -p "$1" /run/rpcbind /var/lib/nfs
    rpcbind -w
    exportfs -o rw,sync,fsid=1,no_root_squash,no_subtree_check,insecure "10.99.0.0/24:$1"
    rpc.mountd
    rpc.nfsd "$2"
}

knfsd_stop() {
    rpc.nfsd 0
    exportfs -ua
}

# client_netns I NAME: namespace NAME with 10.99.0.(10+I) behind veth lnfs-NAME on lnfs0.
client_netns() {
    ip link show lnfs0 >/dev/null 2>&1 || {
        ip link add lnfs0 type bridge
        ip addr add 10.99.0.1/24 dev lnfs0
        ip link set lnfs0 up
    }
    ip netns add "$2"
    ip link add "lnfs-$2" type veth peer name eth0 netns "$2"
    ip link set "lnfs-$2" master lnfs0 up
    ip -n "$2" addr add "10.99.0.$((10 + $1))/24" dev eth0
    ip -n "$2" link set eth0 up
    ip -n "$2" link set lo up
}

# clients_down NAME...: the namespaces and the bridge.
clients_down() {
    for name in "$@"; do ip netns del "$name"; done
    ip link del lnfs0
}

# nfs_mount_opts VERSION: TCP, hard; NFSv3 without locking (no lock manager here).
nfs_mount_opts() {
    opts="vers=$1,proto=tcp,hard,timeo=600"
    [ "$1" = 3 ] && opts="$opts,nolock"
    echo "$opts"
}
