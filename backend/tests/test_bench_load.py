"""bench.load's agents send what `loupe agent` sends: the same frame as Arrow (version 3) or JSON."""

import random
import sys
from pathlib import Path

from loupe.frame import IngestRequest
from loupe.frame_v3 import decode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.load import body, frame  # noqa: E402


def test_a_load_agents_frame_is_the_same_as_arrow_and_as_json():
    fr = frame(7, 3, 1_790_000_000, 200, random.Random(7))
    arrow, media = body(fr, 7, "arrow")
    assert media == "application/vnd.apache.arrow.stream"
    req, (af,) = decode(arrow)
    as_json, media = body(fr, 7, "json")
    assert media == "application/json"
    jreq = IngestRequest.model_validate_json(as_json)
    (jf,) = jreq.frames
    for r in (req, jreq):
        assert r.agent == "load7" and [(s.name, s.state) for s in r.status] == [("load.nfs", "active")]
    assert (af.source, af.seq, af.ts, af.host, af.family) == (jf.source, jf.seq, jf.ts, jf.host, jf.family)
    assert af.n_rows == 200 and af.dims["client"].to_pylist() == fr["columns"]["dims"]["client"]
    assert af.measures["count"].tolist() == fr["columns"]["count"]
    assert af.measures["bytes"].sum() == sum(fr["columns"]["bytes"])
    rows, buckets, n = af.hist["latency"]
    assert (rows.tolist(), buckets.tolist(), n.tolist()) == tuple(fr["columns"]["hist"]["latency"][k]
                                                                 for k in ("row", "bucket", "n"))
