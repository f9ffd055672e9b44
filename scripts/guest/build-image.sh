#!/usr/bin/env bash
# Build the knfsd test guest: a small Debian 12 (bookworm) root file system with
# nfs-kernel-server, fio and what the Loupe agent needs (python3, python3-numpy,
# libbpf1, bpftool; python3-httpx for the test scripts), Debian's stock 6.1 kernel and an initramfs.
#
#   scripts/guest/build-image.sh [OUT_DIR]      (default: .cache/guest)
#
# Writes OUT_DIR/<key>/{vmlinuz,initrd.img,rootfs.ext4,config,manifest.txt} and
# prints that folder on the last line of stdout. <key> hashes the package versions
# apt offers (kernel included) and this script and init.sh, so a new kernel or
# package rebuilds; an existing folder is reused as is. Older keys are removed
# (the image is ~1 GB; CI has ~3 GB for it). Run as root: debootstrap, chroot.
# Environment: GUEST_MIRROR (default: the Debian mirror of this machine's apt
# sources), GUEST_SUITE (bookworm), GUEST_REBUILD=1 to build even when cached.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/.cache/guest}
suite=${GUEST_SUITE:-bookworm}
log() { echo "build-image: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot need it)"
for tool in debootstrap mkfs.ext4 apt-get apt-cache dpkg-deb chroot flock; do
    command -v "$tool" >/dev/null || die "'$tool' not found (make apt-deps installs debootstrap; e2fsprogs and apt are in every Debian)"
done

# Packages of the guest. The agent needs python3 (+ numpy for the synthetic source)
# and libbpf.so.1; the test scripts use httpx; bpftool records the kernel's BPF features.
packages=(nfs-kernel-server fio python3 python3-httpx python3-numpy libbpf1 bpftool
          iproute2 kmod procps initramfs-tools klibc-utils)

# The Debian mirror apt uses here (deb822 .sources or one-line .list files).
mirror=${GUEST_MIRROR:-$(python3 - "$suite" <<'EOF'
import glob, re, sys
suite = sys.argv[1]
for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*"))]:
    try:
        text = open(path).read()
    except OSError:
        continue
    if path.endswith(".sources"):
        for stanza in re.split(r"\n\s*\n", text):
            f = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if suite in f.get("Suites", "").split() and "deb" in f.get("Types", "").split():
                for uri in f.get("URIs", "").split():
                    if uri.rstrip("/").endswith("/debian"):
                        print(uri); sys.exit()
    else:
        for line in text.splitlines():
            m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m and m.group(2) == suite and m.group(1).rstrip("/").endswith("/debian"):
                print(m.group(1)); sys.exit()
EOF
)}
[ -n "$mirror" ] || die "no Debian $suite mirror in /etc/apt/sources.list*; set GUEST_MIRROR"

# Candidate versions of several packages in one apt-cache call (each call takes ~1 s).
versions() {
    apt-cache policy "$@" 2>/dev/null | awk '/^[^ ]/ {sub(":$", "", $1); p=$1} /Candidate:/ {print p, $2}'
}
if ! versions linux-image-amd64 | grep -qv '(none)'; then
    log "apt has no package lists yet: apt-get update"
    apt-get update -qq
fi
# linux-image-amd64 is a meta package: the real one is linux-image-<abi>-amd64.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$kpkg" ] || die "cannot resolve linux-image-amd64 to a kernel package (apt-cache depends)"
kver=${kpkg#linux-image-}

manifest=$( {
    echo "suite $suite"; echo "mirror $mirror"
    versions "$kpkg" | sed 's/^/kernel /'
    versions "${packages[@]}" | sed 's/^/package /'
    echo "build-image.sh $(sha256sum "$0" | cut -c1-16)"
    echo "init.sh $(sha256sum "$here/init.sh" | cut -c1-16)"
} )
key=$(printf '%s\n' "$manifest" | sha256sum | cut -c1-16)
dest=$out/$key
mkdir -p "$out"

exec 9>"$out/.lock"
flock 9  # one build at a time; a second caller waits and then reuses it
if [ -f "$dest/manifest.txt" ] && [ "${GUEST_REBUILD:-0}" != 1 ]; then
    log "cached: $dest"
    echo "$dest"
    exit 0
fi

work=$(mktemp -d "$out/.build.XXXXXX")
root=$work/rootfs
cleanup() {
    for m in "$root/proc" "$root/sys" "$root/dev"; do
        mountpoint -q "$m" 2>/dev/null && umount -l "$m"
    done
    rm -rf "$work"
}
trap cleanup EXIT

start=$SECONDS
log "debootstrap $suite from $mirror into $root (the slow step, 2-3 min)"
include=$(IFS=,; echo "${packages[*]}")
debootstrap --variant=minbase --include="$include" "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
log "debootstrap done after $((SECONDS - start)) s"

log "kernel: $(versions "$kpkg")"
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root "$kpkg" >/dev/null) || die "apt-get download $kpkg failed"
dpkg-deb -x "$work"/"$kpkg"_*.deb "$work/kernel"
# Merged /usr: the package's /lib/modules belongs in usr/lib/modules of the guest.
mkdir -p "$root/usr/lib/modules"
kmods=$work/kernel/lib/modules/$kver
[ -d "$kmods" ] || kmods=$work/kernel/usr/lib/modules/$kver
[ -d "$kmods" ] || die "no modules for $kver in $kpkg"
mv "$kmods" "$root/usr/lib/modules/$kver"
# Drop drivers a VM never loads (about half of the modules' size).
for d in sound drivers/gpu drivers/media drivers/net/wireless drivers/infiniband drivers/staging \
         drivers/bluetooth net/bluetooth net/wireless net/mac80211 drivers/iio drivers/isdn \
         drivers/net/ethernet drivers/scsi/qla2xxx drivers/scsi/lpfc; do
    rm -rf "$root/usr/lib/modules/$kver/kernel/$d"
done
cp "$work/kernel/boot/vmlinuz-$kver" "$work/vmlinuz"
cp "$work/kernel/boot/config-$kver" "$work/config"
cp "$work/config" "$root/boot/config-$kver"  # mkinitramfs reads it (compression support)
grep -q '^CONFIG_DEBUG_INFO_BTF=y' "$work/config" || log "WARNING: $kpkg has no CONFIG_DEBUG_INFO_BTF"

# The initramfs only has to find the root disk (every module costs seconds under
# TCG); 9p and virtio_net load from the root disk later. No resume device to seek.
printf '%s\n' virtio_pci virtio_blk ext4 > "$root/etc/initramfs-tools/modules"
echo RESUME=none > "$root/etc/initramfs-tools/conf.d/resume"
sed -i -e 's/^MODULES=.*/MODULES=list/' -e 's/^COMPRESS=.*/COMPRESS=gzip/' \
    "$root/etc/initramfs-tools/initramfs.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
chroot "$root" depmod "$kver"  # the guest's kmod: the host may have none
chroot "$root" mkinitramfs -o "/boot/initrd.img-$kver" "$kver" >"$work/mkinitramfs.log" 2>&1 \
    || { cat "$work/mkinitramfs.log" >&2; die "mkinitramfs failed (log above)"; }
umount "$root/proc" "$root/sys" "$root/dev"
mv "$root/boot/initrd.img-$kver" "$work/initrd.img"

install -m 0755 "$here/init.sh" "$root/usr/local/sbin/loupe-guest-init"
echo loupe-guest > "$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 loupe-guest\n' > "$root/etc/hosts"
: > "$root/etc/fstab"
# What the guest never reads: package caches, docs, translations.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
       "$root"/usr/share/man/* "$root"/usr/share/locale/* "$root"/usr/share/info/*

# ext4 image straight from the folder (no loop mount); headroom for logs and test files.
used_mb=$(du -sm "$root" | cut -f1)
size_mb=$((used_mb + used_mb / 4 + 256))
mkfs.ext4 -q -L loupe-guest -d "$root" "$work/rootfs.ext4" "${size_mb}M" >&2 \
    || die "mkfs.ext4 -d failed"
printf '%s\nkernel-release %s\nbuilt %s in %d s\n' "$manifest" "$kver" "$(date -u +%FT%TZ)" \
    $((SECONDS - start)) > "$work/manifest.txt"

rm -rf "$dest" "$root"
mkdir -p "$dest"
mv "$work/vmlinuz" "$work/initrd.img" "$work/rootfs.ext4" "$work/config" "$dest/"
mv "$work/manifest.txt" "$dest/"   # last: its presence marks a complete image
# Keep only this key: an older image is a stale one.
for old in "$out"/*/manifest.txt; do
    [ "$(dirname "$old")" = "$dest" ] || rm -rf "$(dirname "$old")"
done
log "built $dest ($(du -sh "$dest" | cut -f1) on disk, $size_mb MB image) in $((SECONDS - start)) s"
echo "$dest"
