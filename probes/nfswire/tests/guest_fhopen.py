"""In the knfsd test guest (tests/kernel): the handles a real knfsd gave an NFS
client, opened on the server by the wire decoder's opener.

    python3 guest_fhopen.py OUT.json CLIENT_MOUNT=SERVER_DIR...

For every file and directory under each SERVER_DIR, the server's handle is taken
from the client's side of the mount (the NFS client embeds it in the handle
name_to_handle_at gives: 12 bytes of its own, a u16 size, the server's bytes),
then named by ``HandleOpener`` as the agent would; last, a file is deleted and
its handle must no longer open. OUT.json lists each case and knfsd's fsid cache.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

from loupe_probes.nfswire.fhopen import HandleOpener, kernel_handle, name_to_handle_at


def server_handle(client_path: str) -> bytes:
    _, nfs = name_to_handle_at(client_path)
    (size,) = struct.unpack_from("=H", nfs, 12)
    return nfs[14:14 + size]


def main(out: str, pairs: list[str]) -> int:
    mounts = [p.split("=", 1) for p in pairs]
    opener = HandleOpener(sorted({server for _, server in mounts}))
    cases = []
    for client, server in mounts:
        for dirpath, _, files in os.walk(server):
            for name in ["", *files]:
                real = os.path.join(dirpath, name) if name else dirpath
                rel = os.path.relpath(real, server)
                wire = server_handle(os.path.join(client, rel))
                k = kernel_handle(wire)
                cases.append({"mount": client, "want": real.rstrip("/"), "got": opener(wire), "wire": wire.hex(),
                              "fsid_type": k.fsid_type if k else None, "fileid_type": k.handle_type if k else None})
    client, server = mounts[0]
    gone = Path(server) / "deleted.bin"
    gone.write_bytes(b"x")
    wire = server_handle(os.path.join(client, "deleted.bin"))
    before = opener(wire)
    gone.unlink()
    os.stat(client)  # the client's attribute cache is irrelevant: the server's inode is gone
    cases.append({"mount": client, "want": None, "got": opener(wire), "before_delete": before, "wire": wire.hex()})
    opener.close()
    expkeys = Path("/proc/net/rpc/nfsd.fh/content").read_text()
    Path(out).write_text(json.dumps({"cases": cases, "expkeys": expkeys}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
