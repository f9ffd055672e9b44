"""Run inside the knfsd guest by tests/kernel/test_nfsd_probe.py (not a pytest module).

With a knfsd export mounted at MOUNT (the export's path on the server: EXPORT):
start the probe, write a file over NFS, rename it over NFS, write it again, and
print as JSON the file names the probe gave each write, its state and counters.
The optional fexit/d_move program is what makes the second name right.

    python3 guest_rename_check.py MOUNT EXPORT
"""

from __future__ import annotations

import json
import os
import sys

from loupe_probes.nfsd import NfsdProbe


def write(path: str, data: bytes, flags: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)  # the NFS client sends its WRITE (and COMMIT) now
    finally:
        os.close(fd)


def files_written(probe: NfsdProbe, ts: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for _family, _host, rows in probe.collect(ts):
        for r in rows:
            if r["dims"]["op"] == "write":
                out[r["dims"]["file"]] = out.get(r["dims"]["file"], 0) + r["bytes"]
    return out


def main(mount: str, export: str) -> dict:
    probe = NfsdProbe("guest")
    started = probe.start()
    result = {"started": started, "state": probe.state, "reason": probe.reason, "notes": probe.notes,
              "export": export}
    if not started:
        return result
    try:
        os.makedirs(f"{mount}/rn", exist_ok=True)
        probe.collect(1)  # drop what came before
        write(f"{mount}/rn/before.bin", b"a" * 4096)
        result["first"] = files_written(probe, 2)
        os.rename(f"{mount}/rn/before.bin", f"{mount}/rn/after.bin")
        write(f"{mount}/rn/after.bin", b"b" * 8192, os.O_APPEND)
        result["second"] = files_written(probe, 3)
        result["stats"] = probe.stats
    finally:
        probe.close()
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
