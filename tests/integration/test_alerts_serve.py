"""An alert on a real `loupe serve`: a scripted load rises and falls, the alert fires and clears,
and a webhook receiver on loopback gets exactly those two posts, even across a kill -9 while the
alert is open. The agent's coming and going is in the event log too."""

import json
import signal
import threading
import time

import httpx
from factories import Receiver, nfs_frame

ADMIN_PW = "alerts-admin-password"


class Load:
    """An agent of its own: one frame a second at the current rate, resent until the server takes it."""

    def __init__(self, server_ref, token):
        self.server_ref, self.token = server_ref, token
        self.rate, self.pending, self.stop = 100, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(1.0 - time.time() % 1.0):
            ts = int(time.time()) - 1
            self.pending.append(nfs_frame(ts, [("10.0.0.7", "read", "/export/a", self.rate, 0, {})],
                                          source="load@nas1", seq=ts).model_dump())
            body = {"frames": self.pending, "agent": "load-agent", "sent_at": time.time(),
                    "status": [{"name": "load.nfs", "families": ["nfs"], "state": "active"}]}
            try:
                r = httpx.post(self.server_ref().base + "/api/v1/ingest", json=body, timeout=2,
                               headers={"Authorization": f"Bearer {self.token}"})
                if r.status_code == 200:
                    self.pending = []
            except httpx.HTTPError:
                pass  # the server is restarting: keep the frames and send them with the next


def admin(server):
    c = httpx.Client(base_url=server.base, timeout=10)
    r = c.post("/api/v1/auth/login", json={"user": "admin", "password": ADMIN_PW})
    assert r.status_code == 200, r.text
    c.headers["X-CSRF-Token"] = r.json()["csrf_token"]
    return c


def test_an_alert_fires_and_clears_on_a_scripted_load_with_exact_webhook_posts(server_factory, tmp_path):
    env = {"LOUPE_ADMIN_PASSWORD": ADMIN_PW, "LOUPE_PUBLIC_URL": "https://nas1.example:8080/"}
    data = tmp_path / "data"
    current = {"s": server_factory("--no-local-agent", data_dir=data, env=env)}
    rx = Receiver([200])
    token = (data / "ingest.token").read_text().strip()
    load = Load(lambda: current["s"], token)
    try:
        s = current["s"]
        c = admin(s)
        r = c.post("/api/v1/alerts", json={"name": "reads over 50", "metric": "nfs.ops", "where": {"op": ["read"]},
                                           "condition": "above", "threshold": 50, "hold_s": 3, "clear_s": 3,
                                           "webhook": rx.url})
        assert r.status_code == 201, r.text
        rule = r.json()
        s.wait_for(lambda: len(rx.posts) >= 1, 30, "the fired post")
        # kill -9 while the alert is open: the restart must not fire it again
        s.stop(signal.SIGKILL)
        current["s"] = s = server_factory("--no-local-agent", data_dir=data, env=env)
        c = admin(s)
        assert c.get(f"/api/v1/alerts/{rule['id']}").json()["state"]["active"]
        load.rate = 5
        s.wait_for(lambda: len(rx.posts) >= 2, 30, "the cleared post")
        time.sleep(5)  # nothing more comes: no second fired, no repost
        kinds = [json.loads(body)["kind"] for _, body in rx.posts]
        assert kinds == ["alert.fired", "alert.cleared"], kinds
        fired, cleared = (json.loads(body) for _, body in rx.posts)
        assert fired["value"] == 100 and cleared["value"] == 5 and cleared["opened_by"] == fired["event_id"]
        assert fired["alert"]["name"] == "reads over 50" and "above 50 ops/s for 3 s" in fired["message"]
        # each post links back to its event and to a worksheet of the statistic over the alert's time
        assert fired["url"] == f"https://nas1.example:8080/alerts?event={fired['event_id']}"
        # from the run's start (its hold before it fired) to the clear, a margin either side
        pad = max(60, (cleared["at_unix"] - fired["at_unix"] + 3) // 4)
        assert cleared["worksheet_url"].startswith("https://nas1.example:8080/?range=")
        assert cleared["worksheet_url"].endswith(f"&paused=1&at={cleared['at_unix'] + pad:.0f}&s=nfs.ops;w:op=read")
        detail = c.get(f"/api/v1/events/{cleared['event_id']}").json()
        assert f"https://nas1.example:8080/{detail['worksheet']}" == cleared["worksheet_url"]
        log = c.get("/api/v1/events", params={"start": "-10m"}).json()["events"]
        alert_kinds = [e["kind"] for e in log if e["kind"].startswith("alert.")]
        assert alert_kinds == ["alert.cleared", "alert.fired"]  # newest first
        assert all(e["delivery"] == "delivered" for e in log if e["kind"].startswith("alert."))
        assert any(e["kind"] == "agent.connected" and e["subject"] == "load-agent" for e in log)
        # the load stops: the agent is reported gone
        load.stop.set()
        s.wait_for(lambda: any(e["kind"] == "agent.disconnected" for e in
                               c.get("/api/v1/events", params={"start": "-10m"}).json()["events"]),
                   40, "the agent's disconnect")
    finally:
        load.stop.set()
        rx.close()
