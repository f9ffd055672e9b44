"""In the knfsd test guest (tests/kernel): the wire decoder (``bpf.nfswire``) on
every interface while the knfsd scenario runs; on SIGTERM, what it counted.

    python3 guest_nfswire.py OUT.json READY

Creates READY once loaded and attached (the scenario starts its clients then),
collects every second like the agent, and writes OUT.json: load time, the
interfaces, the kernel's counters (calls, replies, unmatched, overwritten, ...)
and each row's dims, ops and bytes. A load failure (the verifier's reason) goes
to OUT.json as "error".
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from loupe_probes.nfswire import NfsWireProbe


def main(out: str, ready: str) -> int:
    t0 = time.monotonic()
    probe = NfsWireProbe("knfsd-guest", exports=["/srv/export"], opener=False)
    if not probe.start():
        Path(out).write_text(json.dumps({"error": f"{probe.state}: {probe.reason}"}))
        return 1
    loaded = time.monotonic() - t0
    Path(ready).write_text(f"{loaded:.1f}\n")
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    rows: list[dict] = []

    def collect() -> None:
        for _family, _host, rs in probe.collect(int(time.time())):
            rows.extend({"dims": r["dims"], "count": r["count"], "bytes": r["bytes"]} for r in rs)

    while not stop:
        time.sleep(1)
        collect()
    collect()
    Path(out).write_text(json.dumps({"load_seconds": loaded, "attached": probe.attached, "stats": probe.stats,
                                     "drops": probe.drops_total, "rows": rows}))
    probe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
