"""The wire decoder's opener against handles a real knfsd made (the guest's
Debian 6.1 kernel): a tmpfs exported with ``fsid=1`` and an ext4 exported
without one (knfsd then names it by its UUID) and with ``subtree_check`` (file
handles carrying their parent), mounted over NFSv3 and NFSv4.2. Every file and
directory's handle, taken from the client side, must open on the server as the
file's path; a deleted file's must not (``probes/nfswire/tests/guest_fhopen.py``).
"""

from __future__ import annotations

import json

import pytest

import guest

pytestmark = pytest.mark.kernel

SCRIPT = """
set -eu
modprobe nfsd
modprobe loop
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/fs/nfsd/nfsv4leasetime
mkdir -p /srv/export /srv/disk /run/rpcbind /var/lib/nfs /mnt/t3 /mnt/t4 /mnt/d3 /mnt/d4
mount -t tmpfs -o size=64m loupe-export /srv/export
truncate -s 64M /root/disk.img
mkfs.ext4 -q -F /root/disk.img
mount -o loop /root/disk.img /srv/disk
for d in /srv/export /srv/disk; do
    mkdir -p "$d/sub/deeper"
    echo a > "$d/top.txt"
    echo b > "$d/sub/deeper/with space.bin"
done
rpcbind -w
exportfs -o rw,sync,fsid=1,no_root_squash,no_subtree_check,insecure 127.0.0.1:/srv/export
exportfs -o rw,sync,no_root_squash,subtree_check,insecure 127.0.0.1:/srv/disk
rpc.mountd
rpc.nfsd 2
mount -t nfs -o vers=3,nolock,proto=tcp 127.0.0.1:/srv/export /mnt/t3
mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/srv/export /mnt/t4
mount -t nfs -o vers=3,nolock,proto=tcp 127.0.0.1:/srv/disk /mnt/d3
mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/srv/disk /mnt/d4
exportfs -v > /job/exports.txt
python3 /repo/probes/nfswire/tests/guest_fhopen.py /job/fhopen.json \\
    /mnt/t3=/srv/export /mnt/t4=/srv/export /mnt/d3=/srv/disk /mnt/d4=/srv/disk 2> /job/fhopen.log
umount /mnt/t3 /mnt/t4 /mnt/d3 /mnt/d4
rpc.nfsd 0
"""


@pytest.fixture(scope="module")
def result(guest_image, tmp_path_factory):
    res = guest.run(SCRIPT, image=guest_image, job_dir=tmp_path_factory.mktemp("fhopen-guest"))
    assert res.rc == 0, f"{res.text('fhopen.log')}\nconsole tail:\n{res.console[-4000:]}"
    return json.loads(res.text("fhopen.json"))


def test_every_handle_knfsd_made_opens_as_its_path(result):
    cases = [c for c in result["cases"] if c["want"]]
    # per mount: the root, sub, sub/deeper, top.txt, the file in deeper (and the ext4's lost+found)
    assert len(cases) == 2 * 5 + 2 * 6
    wrong = [c for c in cases if c["got"] != c["want"]]
    assert not wrong, json.dumps(wrong, indent=1) + "\n" + result["expkeys"]


def test_the_handle_kinds_seen(result):
    """fsid=1 -> FSID_NUM (1); the ext4's UUID -> an UUID fsid type (4 to 7);
    export roots are FILEID_ROOT (0); ext4 with subtree_check -> FILEID_INO32_GEN_PARENT (2)."""
    kinds = {(c["want"].split("/")[2], c["fsid_type"], c["fileid_type"]) for c in result["cases"] if c["want"]}
    tmpfs = {(f, t) for d, f, t in kinds if d == "export"}
    ext4 = {(f, t) for d, f, t in kinds if d == "disk"}
    assert {f for f, _ in tmpfs} == {1} and {t for _, t in tmpfs} >= {0}
    assert len({f for f, _ in ext4}) == 1 and {f for f, _ in ext4} <= {4, 5, 6, 7}
    assert {t for _, t in ext4} >= {0, 2}


def test_a_deleted_files_handle_does_not_open(result):
    gone = result["cases"][-1]
    assert gone["want"] is None and gone["before_delete"] == "/srv/export/deleted.bin" and gone["got"] is None
