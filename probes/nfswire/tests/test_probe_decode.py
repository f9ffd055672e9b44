"""The wire probe's decode of its drained maps: a row of `spill` (ops past a full key table)
keeps its client and op, its file shown as "(other files)" as the store shows the files it
folds; a row of `counts` has its file."""

import socket

from loupe.catalog import FILE_OTHER
from loupe_probes.nfswire.probe import NfsWireProbe
from loupe_probes.nfswire.wire import Key, Row, Val

def entry(client: str, fh: int, count: int) -> tuple[bytes, bytes]:
    k = Key(fh=fh, op=1, proto=1, family=4, cpu=0)  # IPv4, NFSv3 GETATTR
    k.addr[:4] = socket.inet_aton(client)
    v = Val(count=count)
    return bytes(k), bytes(v)

def counted(client: str, fh: int, count: int) -> Row:
    """A row of the in-place table, as RowTable.drain() hands it over."""
    kb, _ = entry(client, fh, count)
    return Row(tag=1, key=Key.from_buffer_copy(kb), count=count)

def test_spilled_ops_keep_their_client_and_show_as_other_files():
    probe = NfsWireProbe("nas", ifaces=[], port=2049, exports=["/export"], opener=False)
    (family, host, rows), = probe.decode({"counts": [counted("10.0.0.1", 0x1234, 5)],
                                         "spill": [entry("10.0.0.2", 0, 7), entry("10.0.0.2", 0, 2)]}, 1)
    got = {(r["dims"]["client"], r["dims"]["op"], r["dims"]["file"]): r["count"] for r in rows}
    assert (family, host) == ("nfs", "nas")
    assert got[("10.0.0.2", "getattr", FILE_OTHER)] == 9
    (path,) = [f for (c, _, f) in got if c == "10.0.0.1"]
    assert path and got[("10.0.0.1", "getattr", path)] == 5
    assert not any(c == "(other)" for c, _, _ in got)


def test_an_older_builds_hash_row_reads_as_a_row_of_the_table():
    """Benchmarks load builds from before the in-place table (a `counts` hash of vals):
    their rows convert field for field."""
    from loupe_probes.nfswire.probe import _as_row

    kb, _ = entry("10.0.0.3", 0x99, 4)
    v = Val(count=4, bytes=8192, lat_sum=12345)
    v.lat[3], v.size[4], v.off[0] = 4, 2, 4
    r = _as_row(kb, bytes(v))
    assert (r.count, r.bytes, r.lat_sum, r.key.fh, bytes(r.key.addr[:4])) == (4, 8192, 12345, 0x99, socket.inet_aton("10.0.0.3"))
    assert (list(r.lat), list(r.size), list(r.off)) == (list(v.lat), list(v.size), list(v.off))
