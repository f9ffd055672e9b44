"""The Status page's Activity tiles: built-in defaults, an admin's tiles checked against the catalog,
kept across restarts and audited, and their 7-day sparklines on young and old stores."""

import json
import time

import pytest
from factories import ADMIN_PW, nfs_frame, sign_in
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings
from loupe.frame import Frame
from loupe.alerts import SETTLE
from loupe.tiles import DEFAULT_TILES, LEVEL_SECONDS, SPARK_POINTS, TTLCache, level_of, spark_window

TOKEN = "tiles-token"
RETAIN = {"second": 48 * 3600, "minute": 30 * 86400, "hour": 365 * 86400}


def app_for(path):
    return create_app(Settings(data_dir=path, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW))


@pytest.fixture
def client(tmp_path):
    with TestClient(app_for(tmp_path)) as c:
        sign_in(c)
        yield c


def ingest(client, frames):
    r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text


def tiles(client):
    return client.get("/api/v1/status/tiles").json()["tiles"]


def with_change(ts, i, **change):
    return {"tiles": [dict(t, **change) if k == i else t for k, t in enumerate(ts)]}


def test_eight_built_in_tiles_until_an_admin_changes_them(client):
    cfg = client.get("/api/v1/status/tiles").json()
    assert cfg["default"] is True and cfg["set_by"] is None
    assert cfg["levels"] == ["sunny", "partly cloudy", "cloudy", "stormy", "hurricane"]
    assert [t["id"] for t in cfg["tiles"]] == ["nfs_ops", "nfs_read", "nfs_write", "net_in", "net_out", "disk_iops",
                                               "disk_bytes", "cpu"]
    metrics = {m["name"] for m in client.get("/api/v1/metrics").json()["metrics"]}
    assert {t["metric"] for t in cfg["tiles"]} <= metrics
    st = client.get("/api/v1/status").json()
    assert [t["id"] for t in st["tiles"]] == [t["id"] for t in cfg["tiles"]]
    nfs = st["tiles"][0]
    assert nfs["thresholds"] == [1000, 5000, 20000, 50000] and nfs["by"] == "client" and nfs["error"] is None


BAD = [
    # (tile index, change, status, what the detail must say)
    (1, {"metric": "nfs.colour"}, 400, "tiles[1] (nfs_read).metric: unknown metric 'nfs.colour'"),
    (0, {"by": "colour"}, 400, "tiles[0] (nfs_ops).by: unknown dimension 'colour' for nfs.ops"),
    (3, {"where": {"flavour": ["in"]}}, 400, "tiles[3] (net_in).where: unknown dimension 'flavour' for net.bytes"),
    (3, {"where": {"direction": []}}, 400, "tiles[3] (net_in).where: no values for 'direction'"),
    (5, {"thresholds": [10, 20, 15, 30]}, 400, "tiles[5] (disk_iops).thresholds: each must be above the one before "
                                               "(ascending), but 15 follows 20"),
    (5, {"thresholds": [10, 10, 15, 30]}, 400, "tiles[5] (disk_iops).thresholds: each must be above the one before"),
    (2, {"id": "nfs_ops"}, 400, "tiles[2] (nfs_ops).id: tiles[0] has this id already"),
    (0, {"divide_by_cpus": True}, 400, "tiles[0] (nfs_ops).divide_by_cpus: nfs.ops has no cpu dimension"),
    (5, {"thresholds": [10, 20, 30]}, 422, "tiles.5.thresholds: List should have at least 4 items"),
    (4, {"scale": 0}, 422, "tiles.4.scale: Input should be greater than 0"),
    (4, {"title": ""}, 422, "tiles.4.title: String should have at least 1 character"),
    (4, {"id": "Net Out"}, 422, "tiles.4.id: String should match pattern"),
    (4, {"thresholds": [1, 2, "3", 4]}, 422, "tiles.4.thresholds.2: Input should be a valid number"),
    (4, {"colour": "red"}, 422, "tiles.4.colour: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("i", "change", "code", "detail"), BAD)
def test_bad_tiles_are_refused_naming_the_tile_and_field(client, i, change, code, detail):
    before = tiles(client)
    r = client.put("/api/v1/status/tiles", json=with_change(before, i, **change))
    assert r.status_code == code, r.text
    assert detail in r.json()["detail"]
    assert tiles(client) == before  # nothing saved


def test_tile_count_and_non_finite_thresholds_are_refused(client):
    ts = tiles(client)
    r = client.put("/api/v1/status/tiles", json={"tiles": ts + [dict(ts[0], id="ninth")]})
    assert r.status_code == 422 and "tiles: List should have at most 8 items" in r.json()["detail"]
    r = client.put("/api/v1/status/tiles", json={"tiles": []})
    assert r.status_code == 422 and "tiles: List should have at least 1 item" in r.json()["detail"]
    body = json.dumps(with_change(ts, 6, thresholds=[1, 2, 3, 4])).replace("[1, 2, 3, 4]", "[1, 2, 3, NaN]")
    r = client.put("/api/v1/status/tiles", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "tiles.6.thresholds.3: Input should be a finite number" in r.json()["detail"]


def test_saved_tiles_outlive_a_restart_and_are_audited(tmp_path):
    with TestClient(app_for(tmp_path)) as c:
        sign_in(c)
        ts = tiles(c)
        ts[0] = dict(ts[0], thresholds=[1, 2, 3, 4], title="NFS ops")
        ts[7] = {"id": "zfs_arc", "title": "ARC misses", "metric": "zfs.arc", "where": {"result": ["miss"]},
                 "unit": "misses/s", "scale": 1, "thresholds": [10, 100, 1000, 10000]}
        del ts[6]
        r = c.put("/api/v1/status/tiles", json={"tiles": ts})
        assert r.status_code == 200, r.text
        assert r.json()["default"] is False and r.json()["set_by"] == "admin"
        entry = c.get("/api/v1/audit").json()["entries"][0]
        assert entry["actor"] == "admin" and entry["action"] == "status.tiles.set"
        assert entry["detail"] == ("7 tiles: added zfs_arc; removed disk_bytes, cpu; "
                                   "changed nfs_ops (title, thresholds)")
    with TestClient(app_for(tmp_path)) as c:  # the same data directory, the store reopened
        sign_in(c)
        cfg = c.get("/api/v1/status/tiles").json()
        assert cfg["default"] is False and [t["id"] for t in cfg["tiles"]] == [t["id"] for t in ts]
        st = c.get("/api/v1/status").json()["tiles"]
        assert st[0]["title"] == "NFS ops" and st[0]["thresholds"] == [1, 2, 3, 4]
        assert st[-1]["metric"] == "zfs.arc" and st[-1]["where"] == {"result": ["miss"]} and st[-1]["error"] is None
        r = c.delete("/api/v1/status/tiles")
        assert r.status_code == 200 and r.json()["default"] is True and r.json()["set_by"] == "admin"
        assert [t["id"] for t in r.json()["tiles"]] == [t.id for t in DEFAULT_TILES]
        entry = c.get("/api/v1/audit").json()["entries"][0]
        assert entry["action"] == "status.tiles.reset" and entry["detail"] == "back to the 8 built-in tiles"
    with TestClient(app_for(tmp_path)) as c:
        sign_in(c)
        assert c.get("/api/v1/status/tiles").json()["default"] is True


def test_viewers_read_the_tiles_but_only_admins_change_them(client):
    for name, role in (("vera", "viewer"), ("otto", "operator")):
        assert client.post("/api/v1/users", json={"name": name, "role": role, "password": f"{name}-password"}
                           ).status_code == 201
    body = {"tiles": tiles(client)}
    for name in ("vera", "otto"):
        sign_in(client, name, f"{name}-password")
        assert client.get("/api/v1/status/tiles").status_code == 200
        r = client.put("/api/v1/status/tiles", json=body)
        assert r.status_code == 403 and "needs the admin role" in r.json()["detail"]
        assert client.delete("/api/v1/status/tiles").status_code == 403
    sign_in(client)
    assert all(e["action"] != "status.tiles.set" for e in client.get("/api/v1/audit").json()["entries"])


def test_a_saved_tile_the_catalog_no_longer_knows_says_so(client):
    store = client.app.state.loupe.store
    saved = [t.model_dump() for t in DEFAULT_TILES]
    saved[1]["metric"] = "nfs.retired"
    store.config_put("status_tiles", {"tiles": saved, "by": "admin", "at": 1.0})
    st = {t["id"]: t for t in client.get("/api/v1/status").json()["tiles"]}
    assert "unknown metric 'nfs.retired'" in st["nfs_read"]["error"] and st["nfs_read"]["values"] == []
    assert st["nfs_ops"]["error"] is None


def test_a_young_store_fills_the_sparkline_and_the_cpu_tile_is_a_share_of_all_cpus(client):
    now = int(time.time())
    start = now - 300
    frames = []
    for ts in range(start, now):
        frames.append(nfs_frame(ts, [("10.0.0.7", "read", "/export/f", 40, 40 * 1_000_000, {})], source="n@h"))
        frames.append(Frame(source="c@h", seq=ts, ts=ts, family="cpu", host="nas1", rows=[
            dict(dims=dict(cpu=str(c), mode="user", application=""), count=250_000) for c in range(4)]))
    ingest(client, frames)
    st = {t["id"]: t for t in client.get("/api/v1/status").json()["tiles"]}
    nfs = st["nfs_ops"]
    # five minutes of data span the sparkline: 5 s steps from the oldest second, not a week of empty hours
    assert nfs["step"] == 5 and start - 5 < nfs["span_start"] <= start
    assert 55 <= len(nfs["values"]) <= 62 and nfs["timestamps"][0] == nfs["span_start"]
    assert all(abs(v - 40) < 1e-9 for v in nfs["values"][1:-2])
    assert st["nfs_read"]["value"] == pytest.approx(40.0)  # 40 MB/s
    assert st["nfs_read"]["level"] == pytest.approx(40.0) and st["nfs_read"]["level_seconds"] == 10
    assert st["nfs_write"]["value"] == 0
    assert st["cpu"]["value"] == pytest.approx(25.0)  # four CPUs a quarter busy: 25 % of all, not 100 %
    assert all(abs(v - 25) < 1e-9 for v in st["cpu"]["values"][1:-2])


# (oldest stored second before now, or None) -> (tier, step, points at most)
WINDOWS = [
    (None, "hour", 3600, SPARK_POINTS + 1),
    (30 * 86400, "hour", 3600, SPARK_POINTS + 1),
    (3 * 86400, "minute", 1800, 145),
    (6 * 3600, "minute", 300, 73),
    (300, "second", 5, 61),
    (5, "second", 1, 61),  # at least a minute
]


@pytest.mark.parametrize(("age", "tier", "step", "points"), WINDOWS)
def test_sparkline_window(age, tier, step, points):
    now = 1_800_000_000
    w = spark_window(now, None if age is None else now - age, RETAIN)
    assert (w.tier, w.step) == (tier, step)
    span = 7 * 86400 if age is None else max(60, min(age, 7 * 86400))
    assert w.points <= points and w.start <= now - span < w.start + w.step and now <= w.end < now + w.step


def test_ttl_cache_keeps_values_a_while_and_never_none():
    t = [0.0]
    cache = TTLCache(ttl=60, size=2, clock=lambda: t[0])
    calls = []
    get = lambda k, v: cache.get(k, lambda: calls.append(k) or v)  # noqa: E731
    assert get("a", 1) == 1 and get("a", 2) == 1 and calls == ["a"]
    t[0] = 61
    assert get("a", 3) == 3 and calls == ["a", "a"]
    assert get("n", None) is None and get("n", 4) == 4  # None is computed again
    assert get("b", 5) == 5 and get("c", 6) == 6  # past the size: old entries go, the new one stays
    assert get("c", 7) == 6


# ------------------------------------------------------------------ the weather's value

NOW = 1_800_000_000


def test_the_weather_is_the_mean_of_the_last_settled_seconds():
    start = NOW - 15
    steady = [100.0] * 15
    assert level_of(steady, start, NOW) == pytest.approx(100.0)
    # a burst in one settled second moves the mean by a tenth of it
    burst = steady.copy()
    burst[NOW - SETTLE - 1 - start] = 1100.0
    assert level_of(burst, start, NOW) == pytest.approx(200.0)
    # seconds still arriving (the last SETTLE) do not count, nor do those before the window
    late = steady.copy()
    late[-1] = late[0] = 10**6
    assert level_of(late, start, NOW) == pytest.approx(100.0)
    # a second the series does not reach counts as 0
    assert level_of([100.0] * 5, NOW - SETTLE - 5, NOW) == pytest.approx(50.0)


def test_a_bursty_load_keeps_its_weather_where_the_newest_second_would_flicker():
    """900 and 1,200 ops/s in turn, around a threshold of 1,000: judged on the newest second the
    level would flip at every refresh; the trailing mean (1,050) stays on one side."""
    load = [900.0 if ts % 2 else 1200.0 for ts in range(NOW - 100, NOW)]

    def above(now: int, newest: bool) -> bool:
        window = load[now - 15 - (NOW - 100): now - (NOW - 100)]
        v = window[-1] if newest else level_of(window, now - 15, now)
        return v >= 1000

    newest = {above(now, True) for now in range(NOW - 60, NOW)}
    mean = {above(now, False) for now in range(NOW - 60, NOW)}
    assert newest == {True, False} and mean == {True}
    assert LEVEL_SECONDS == 10


def test_a_tile_reports_the_newest_second_and_judges_its_weather_on_the_mean(client):
    now = int(time.time())
    rate = {ts: 40 for ts in range(now - 30, now)}
    rate[now - SETTLE - 2] = 400  # one settled second's burst: a tenth of it shows in the level
    ingest(client, [nfs_frame(ts, [("10.0.0.7", "read", "/export/f", 1, mb * 1_000_000, {})], source="n@h")
                    for ts, mb in rate.items()])
    tile = next(t for t in client.get("/api/v1/status").json()["tiles"] if t["id"] == "nfs_read")
    assert tile["value"] == pytest.approx(40.0)  # the newest second
    assert tile["level"] == pytest.approx(76.0)  # (9 x 40 + 400) / 10


H = 3600


@pytest.mark.parametrize(("second", "minute", "hour", "oldest"), [
    (None, None, None, None),                            # an empty store
    (11 * H + 3510, 11 * H + 3480, None, 11 * H + 3510),  # a young store: its first second, not its minute
    (11 * H + 3510, 11 * H + 3480, 11 * H, 11 * H + 3510),  # its hour rolled up: still its first second
    (12 * H, 11 * H + 3540, 11 * H, 11 * H + 3540),      # seconds pruned up to 12:00: the minutes reach back further
    (100 * H, 60 * H, 10 * H, 10 * H),                   # seconds and minutes pruned: the hours are the oldest
    (None, None, 5 * H, 5 * H),                          # only hours left
    (None, 7 * H + 60, 7 * H, 7 * H + 60),               # no seconds: the minutes within the oldest hour
])
def test_the_oldest_second_is_not_a_coarse_periods_start(second, minute, hour, oldest):
    from loupe.tiles import oldest_second

    ext = {"second": (1, second, None), "minute": (1, minute, None), "hour": (1, hour, None)}
    assert oldest_second(ext) == oldest


def test_a_store_whose_first_seconds_cross_an_hour_gives_its_first_second(tmp_path):
    """The demo's first 90 s from 11:58:30: once hour 11 is rolled up, the hour tier's row says
    11:00, but the sparkline starts at the first second (it once spanned a mostly empty hour)."""
    from factories import NOW, random_nfs_frames

    from loupe.store.duckdb_store import DuckDBStore
    from loupe.tiles import oldest_second

    top = NOW - NOW % H + H  # an hour boundary
    s = DuckDBStore(tmp_path / "s.duckdb", clock=lambda: top + 300)
    try:
        s.ingest([f for t in range(top - 90, top + 30) for f in random_nfs_frames(t, 1, seed=t, source="d@h")],
                 received_at=top + 31)
        s.rollup(top + 300)
        ext = s.extent()
        assert ext["hour"][1] == top - H  # the rolled-up hour starts an hour before the data
        assert oldest_second(ext) == top - 90
    finally:
        s.close()
