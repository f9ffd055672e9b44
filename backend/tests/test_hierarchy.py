"""Path prefix filters (file^=/dir) on every tier, and the directory tree of a path dimension."""

import random
import time

import pytest
from factories import ADMIN_PW, NOW, sign_in
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.catalog import FILE_OTHER
from loupe.config import Settings
from loupe.frame import Frame
from loupe.hierarchy import OTHER, SELF, build_tree, directory
from loupe.query import QueryError, parse_statistic, root_of
from loupe.store.base import PathSum
from loupe.store.duckdb_store import DuckDBStore
from loupe.timerange import Window

SHARES = ("/export/home", "/export/homework", "/export/db")
TOKEN = "hierarchy-token"


def path_frames(start, seconds, *, seed=3, host="nas1", source="p@h"):
    """Rows over a small tree: each share has two levels of directories, files, and the share
    directory itself; /export/homework shares a string prefix with /export/home but is not under it.
    Returns the frames and the rows as (ts, client, share, file, count)."""
    rnd = random.Random(seed)
    frames, flat = [], []
    for ts in range(start, start + seconds):
        rows = []
        for _ in range(rnd.randint(3, 10)):
            share = rnd.choice(SHARES)
            f = rnd.choice([share, f"{share}/{rnd.choice('ab')}/{rnd.choice('xy')}/{rnd.randint(1, 3)}",
                            f"{share}/{rnd.choice('ab')}/top{rnd.randint(1, 2)}"])
            client, n = f"10.0.0.{rnd.randint(1, 3)}", rnd.randint(1, 40)
            rows.append(dict(dims=dict(client=client, op="read", proto="v3", share=share, file=f), count=n,
                             bytes=n * 4096, lat_sum=n * 1000, hist={}))
            flat.append((ts, client, share, f, n))
        frames.append(Frame(source=source, seq=ts, ts=ts, family="nfs", host=host, rows=rows))
    return frames, flat


def under(path, prefix):
    """The filter's meaning, written plainly: the directory itself or anything below it."""
    p = prefix.rstrip("/")
    return path.startswith("/") if not p else path == p or path.startswith(p + "/")


@pytest.fixture(scope="module")
def tiered(tmp_path_factory):
    """Two hours of seconds, the first rolled up into minutes and an hour, the rest still raw (read only)."""
    store = DuckDBStore(tmp_path_factory.mktemp("tiered") / "h.duckdb", clock=lambda: NOW)
    frames, flat = path_frames(NOW, 2 * 3600)
    store.ingest(frames, received_at=NOW + 2 * 3600)
    store.rollup(NOW + 3600 + 1800)  # hour 0 rolled up; hour 1 half in minutes, half in seconds
    store.compact(NOW + 3600 + 600)
    yield store, flat
    store.close()


WINDOWS = {
    "second": Window(NOW + 3000, NOW + 4800, 60, "second"),
    "minute": Window(NOW + 600, NOW + 6600, 300, "minute"),
    "hour": Window(NOW, NOW + 7200, 3600, "hour"),
}


@pytest.mark.parametrize("tier", WINDOWS)
@pytest.mark.parametrize("prefix", ["/export/home", "/export/home/", "/export/home/a", "/export"])
def test_a_prefix_filter_selects_a_subtree_on_every_tier(tiered, tier, prefix):
    store, flat = tiered
    w = WINDOWS[tier]
    st = parse_statistic("nfs.ops", "client", [f"file^={prefix}"])
    agg = store.aggregate(st, w, 10)
    for i, t0 in enumerate(range(w.start, w.end, w.step)):
        want = sum(n for ts, _, _, f, n in flat if t0 <= ts < t0 + w.step and under(f, prefix)) / w.step
        assert agg.total[i] == pytest.approx(want), (tier, i)
    want_clients = {}
    for ts, c, _, f, n in flat:
        if w.start <= ts < w.end and under(f, prefix):
            want_clients[c] = want_clients.get(c, 0) + n / w.seconds
    assert dict(zip(agg.keys, agg.key_means)) == pytest.approx(want_clients)
    assert sum(agg.total) > 0
    # /export/home does not take /export/homework in
    if prefix.startswith("/export/home"):
        work = parse_statistic("nfs.ops", None, ["file^=/export/homework"])
        assert store.aggregate(work, w, 1).total[0] > 0
        assert all("homework" not in k for k in store.aggregate(
            parse_statistic("nfs.ops", "file", [f"file^={prefix}"]), w, 1000).keys)


def test_prefix_filters_on_share_and_the_live_second_agree_with_the_rows(tiered):
    store, flat = tiered
    st = parse_statistic("nfs.ops", "share", ["share^=/export/home,/export/db", "client=10.0.0.1"])
    ts = NOW + 7000
    total, values, other = store.second(st, ts, ["/export/db"])
    rows = [(s, n) for t, c, s, _, n in flat if t == ts and c == "10.0.0.1" and s in ("/export/home", "/export/db")]
    assert total == sum(n for _, n in rows) and values["/export/db"] == sum(n for s, n in rows if s == "/export/db")
    # the totals tables answer a share breakdown with a share prefix exactly as the rows do
    w = WINDOWS["hour"]
    by = parse_statistic("nfs.ops", "share", ["share^=/export/home"])
    store.use_totals = True
    fast = store.path_sums(by, w, "/", 3)
    store.use_totals = False
    slow = store.path_sums(by, w, "/", 3)
    store.use_totals = True
    assert sorted((p.path, p.cut, round(p.value, 9)) for p in fast) == \
        sorted((p.path, p.cut, round(p.value, 9)) for p in slow)
    assert [p.path for p in fast] == ["/export/home"]


@pytest.mark.parametrize("where,needle", [
    (["client^=/x"], "a prefix filter (client^=/path) applies to path dimensions only; 'client' is not one "
                     "(path dimensions of nfs.ops: file, share)"),
    (["file^=export/home"], "prefix filter file^='export/home' must be a path starting with '/'"),
    (["file^="], "prefix filter file^='' must be a path starting with '/'"),
    (["file^=/a,b"], "prefix filter file^='b' must be a path starting with '/'"),
    (["^=/a"], "cannot read filter '^=/a'"),
    (["latency^=/a"], "applies to path dimensions only"),
])
def test_prefix_filter_errors_name_the_problem(where, needle):
    with pytest.raises(QueryError) as e:
        parse_statistic("nfs.ops", "file", where)
    assert needle in str(e.value)


def test_a_prefix_filter_reads_back_as_written_and_roots_the_tree():
    st = parse_statistic("nfs.ops", "file", ["file^=/export/home/", "op=read"])
    assert st.prefixes == (("file", ("/export/home",)),)
    assert st.where_dict == {"op": ["read"], "file^": ["/export/home"]}
    assert root_of(st) == "/export/home"
    assert parse_statistic("nfs.ops", "file", ["file^=/"]).prefixes == (("file", ("/",)),)
    assert root_of(parse_statistic("nfs.ops", "file", ["file^=/a,/b"])) == "/"
    assert root_of(parse_statistic("nfs.ops", "client", ["file^=/a"])) == "/"


# ---------------------------------------------------------------- the tree
def _walk(node, depth=0):
    yield node, depth
    for c in node.children:
        yield from _walk(c, depth + 1)


def test_the_tree_sums_to_the_unfiltered_total_with_top_n_other_and_depth(tiered):
    store, flat = tiered
    w = WINDOWS["minute"]
    st = parse_statistic("nfs.ops", "file", [])
    total = store.aggregate(parse_statistic("nfs.ops", None, []), w, 1).total
    want_total = sum(total) / len(total)
    tree, nodes = build_tree(store.path_sums(st, w, "/", 3), "/", top=2)
    assert tree.value == pytest.approx(want_total) and want_total > 0
    assert nodes == sum(1 for _ in _walk(tree))
    for node, depth in _walk(tree):
        if node.children:  # every directory's value is exactly what its children add up to
            assert sum(c.value for c in node.children) == pytest.approx(node.value)
            assert len(node.children) <= 3 and [c.value for c in node.children if c.kind != "other"] == \
                sorted((c.value for c in node.children if c.kind != "other"), reverse=True)
        assert depth <= 3
    export = tree.children[0]
    assert (export.name, export.path, export.kind) == ("export", "/export", "dir")
    # three shares, top 2: the smallest goes into (other), which says how many it holds
    shares = {}
    for ts, _, s, _, n in flat:
        if w.start <= ts < w.end:
            shares[s] = shares.get(s, 0) + n / w.seconds
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])
    assert [(c.name, c.kind) for c in export.children] == \
        [(ranked[0][0].rsplit("/", 1)[1], "dir"), (ranked[1][0].rsplit("/", 1)[1], "dir"), (OTHER, "other")]
    assert export.children[2].value == pytest.approx(ranked[2][1]) and export.children[2].merged == 1
    # depth 3 from / ends at /export/<share>/<a or b>: cut there, with the value of all below
    a = next(c for c in export.children[0].children if c.name in ("a", "b"))
    assert a.truncated and a.children == [] and a.kind == "dir"
    want_a = sum(n for ts, _, _, f, n in flat if w.start <= ts < w.end and under(f, a.path)) / w.seconds
    assert a.value == pytest.approx(want_a)
    # the share directory's own operations are a node of their own
    own = next(c for c in export.children[0].children if c.kind == "self")
    assert own.name == SELF and own.path == export.children[0].path
    assert own.value == pytest.approx(sum(n for ts, _, _, f, n in flat
                                          if w.start <= ts < w.end and f == own.path) / w.seconds)


def test_a_rooted_tree_is_the_subtree_and_files_are_leaves(tiered):
    store, flat = tiered
    w = WINDOWS["second"]
    st = parse_statistic("nfs.ops", "file", ["file^=/export/home/a"])
    tree, _ = build_tree(store.path_sums(st, w, directory(root_of(st)), 2), root_of(st), top=100)
    assert (tree.name, tree.path) == ("a", "/export/home/a")
    want = sum(n for ts, _, _, f, n in flat if w.start <= ts < w.end and under(f, "/export/home/a")) / w.seconds
    assert tree.value == pytest.approx(want)
    files = {n.path: n.value for n, _ in _walk(tree) if n.kind == "file"}
    assert "/export/home/a/x/1" in files or "/export/home/a/y/1" in files
    assert all(p.startswith("/export/home/a/") for p in files)
    assert sum(files.values()) == pytest.approx(want)  # depth 2 reaches every file under a


def test_folded_files_are_a_node_of_their_own_and_the_tree_is_bounded(tmp_path):
    store = DuckDBStore(tmp_path / "f.duckdb", top_files=8, clock=lambda: NOW)
    try:
        rows = [dict(dims=dict(client="c", op="read", proto="v3", share="/s", file=f"/s/d{i % 4}/f{i}"),
                     count=1 + i, bytes=0, lat_sum=0, hist={}) for i in range(12)]
        store.ingest([Frame(source="f@h", seq=1, ts=NOW, family="nfs", host="h", rows=rows)], received_at=NOW + 1)
        w = Window(NOW, NOW + 1, 1, "second")
        st = parse_statistic("nfs.ops", "file", [])
        tree, _ = build_tree(store.path_sums(st, w, "/", 4), "/", top=1)
        kinds = [(c.name, c.kind) for c in tree.children]
        # the folded files stay beside the one top directory however small, never inside (other)
        assert kinds == [("s", "dir"), (FILE_OTHER, "folded")]
        assert tree.children[1].value == sum(1 + i for i in range(4)) and tree.children[1].path is None
        assert tree.value == sum(1 + i for i in range(12))
        # a prefix filter cannot match the folded files: the store says how much they are
        sub = parse_statistic("nfs.ops", "file", ["file^=/s/d1"])
        assert store.folded(sub, w) == sum(1 + i for i in range(4))
    finally:
        store.close()
    # the node budget: directories past it keep their value but not their children
    sums = [PathSum(f"/d{i}/e{j}/f", False, 1.0, 1) for i in range(30) for j in range(30)]
    tree, nodes = build_tree(sums, "/", top=100, max_nodes=100)
    assert nodes <= 100 and sum(1 for _ in _walk(tree)) == nodes
    assert len(tree.children) == 30 and any(c.truncated and not c.children for c in tree.children)
    assert sum(c.value for c in tree.children) == 900


# ---------------------------------------------------------------- the API
@pytest.fixture
def client(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW))
    with TestClient(app) as c:
        sign_in(c)
        yield c


def _seed(client, seconds=60):
    start = int(time.time()) - seconds - 2
    frames, flat = path_frames(start, seconds, seed=11)
    r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["accepted"] == seconds, r.text
    return start, flat


def test_hierarchy_and_prefix_filter_over_the_api(client):
    start, flat = _seed(client)
    rng = {"start": str(start), "end": str(start + 60)}
    h = client.get("/api/v1/hierarchy", params={"metric": "nfs.ops", "by": "file", "depth": 2, "top": 5, **rng})
    assert h.status_code == 200, h.text
    body = h.json()
    total = sum(n for *_, n in flat) / 60
    assert body["root"] == "/" and body["total"] == pytest.approx(total) and body["tree"]["value"] == body["total"]
    assert [c["path"] for c in body["tree"]["children"]] == ["/export"]
    assert sorted(c["path"] for c in body["tree"]["children"][0]["children"]) == sorted(SHARES)
    assert body["tier"] == "second" and body["end"] - body["start"] == 60 and not body["approximate"]

    where = [("where", "file^=/export/home/")]
    h = client.get("/api/v1/hierarchy", params=[("metric", "nfs.ops"), ("by", "file"), *where, *rng.items()]).json()
    home = sum(n for *_, f, n in flat if under(f, "/export/home")) / 60
    assert h["root"] == "/export/home" and h["total"] == pytest.approx(home)
    assert h["statistic"]["where"] == {"file^": ["/export/home"]}
    assert h["statistic"]["name"] == "NFS operations per second for file under /export/home broken down by file"
    q = client.get("/api/v1/query", params=[("metric", "nfs.ops"), *where, ("step", 60), *rng.items()]).json()
    assert sum(q["total"]) * q["step"] == pytest.approx(home * 60)  # the points cover the 60 s

    # shares fold the same way
    s = client.get("/api/v1/hierarchy", params={"metric": "nfs.ops", "by": "share", **rng}).json()
    assert {c["path"]: round(c["value"], 6) for c in s["tree"]["children"][0]["children"]} == \
        {sh: round(sum(n for *_, x, _, n in flat if x == sh) / 60, 6) for sh in SHARES}

    # a worksheet keeps the filter as written
    ws = {"name": "home", "statistics": [{"metric": "nfs.ops", "by": "file", "where": {"file^": ["/export/home"]}}]}
    r = client.post("/api/v1/worksheets", json=ws)
    assert r.status_code == 201, r.text
    assert client.get(f"/api/v1/worksheets/{r.json()['id']}").json()["statistics"][0]["where"] == \
        {"file^": ["/export/home"]}
    bad = {"name": "x", "statistics": [{"metric": "nfs.ops", "where": {"file^": ["home"]}}]}
    r = client.post("/api/v1/worksheets", json=bad)
    assert r.status_code == 400 and "statistics[0]: prefix filter file^='home' must be a path" in r.json()["detail"]


@pytest.mark.parametrize("params,status,needle", [
    ({"by": "client"}, 400, "hierarchy needs 'by', a path dimension: file or share"),
    ({}, 400, "hierarchy needs 'by'"),
    ({"by": "file", "where": "op^=/read"}, 400, "applies to path dimensions only"),
    ({"by": "file", "where": "file^=home"}, 400, "must be a path starting with '/'"),
    ({"by": "file", "depth": 0}, 422, "depth"),
    ({"by": "file", "top": 1000}, 422, "top"),
])
def test_hierarchy_errors_name_the_problem(client, params, status, needle):
    r = client.get("/api/v1/hierarchy", params={"metric": "nfs.ops", **params})
    assert r.status_code == status, r.text
    assert needle in str(r.json()["detail"])


def test_a_directory_filter_says_how_much_folded_files_could_add(tmp_path):
    """Files folded into '(other files)' have no path: a chart filtered on a directory says what they add up to."""
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW,
                              top_files=2))
    with TestClient(app) as c:
        sign_in(c)
        start = (int(time.time()) - 30) // 10 * 10  # whole 10 s points: the window is these 10 s
        rows = [dict(dims=dict(client="c", op="read", proto="v3", share="/export/home", file=f"/export/home/f{i}"),
                     count=10 * (i + 1), bytes=0, lat_sum=0, hist={}) for i in range(5)]
        frames = [Frame(source="f@h", seq=start + k, ts=start + k, family="nfs", host="h", rows=rows).model_dump()
                  for k in range(10)]
        r = c.post("/api/v1/ingest", json={"frames": frames}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200, r.text
        rng = [("start", str(start)), ("end", str(start + 10)), ("step", 10)]
        q = c.get("/api/v1/query", params=[("metric", "nfs.ops"), ("where", "file^=/export/home"), *rng]).json()
        # f3 and f4 (40 + 50 ops/s) kept their names; f0..f2 (10 + 20 + 30) were folded
        assert sum(q["total"]) * q["step"] == pytest.approx(90 * 10)
        assert q["approximate"], q
        assert any("60 ops/s of files folded into '(other files)'" in n for n in q["notes"]), q["notes"]
        unfiltered = c.get("/api/v1/query", params=[("metric", "nfs.ops"), *rng]).json()
        assert not unfiltered["approximate"] and unfiltered["notes"] == []
        h = c.get("/api/v1/hierarchy", params=[("metric", "nfs.ops"), ("by", "file"), ("start", str(start)),
                                               ("end", str(start + 10))]).json()
        assert [(n["name"], n["kind"]) for n in h["tree"]["children"]] == [("export", "dir"), (FILE_OTHER, "folded")]
        assert h["tree"]["children"][1]["value"] == pytest.approx(60) and h["approximate"]


def test_live_pushes_keep_a_directory_filter(client):
    now = int(time.time())
    with client.websocket_connect("/api/v1/live") as ws:
        ws.send_json({"op": "subscribe", "id": "h", "metric": "nfs.ops", "by": "file",
                      "where": {"file^": ["/export/home"]}, "keys": ["/export/home/a"]})
        assert ws.receive_json() == {"id": "h", "subscribed": True}
        ws.send_json({"op": "subscribe", "id": "bad", "metric": "nfs.ops", "where": {"client^": ["/x"]}})
        assert "applies to path dimensions only" in ws.receive_json()["error"]
        rows = [dict(dims=dict(client="c", op="read", proto="v3", share=s, file=f), count=n, bytes=0, lat_sum=0,
                     hist={})
                for s, f, n in [("/export/home", "/export/home/a", 7), ("/export/home", "/export/home", 2),
                                ("/export/homework", "/export/homework/b", 5), ("/export/db", "/export/db/c", 3)]]
        fr = Frame(source="live@h", seq=now, ts=now, family="nfs", host="h", rows=rows)
        r = client.post("/api/v1/ingest", json={"frames": [fr.model_dump()]}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.json()["accepted"] == 1
        assert ws.receive_json() == {"id": "h", "ts": now, "total": 9.0, "values": {"/export/home/a": 7.0},
                                     "other": 2.0}
