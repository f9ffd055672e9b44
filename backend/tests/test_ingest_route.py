"""POST /api/v1/ingest with a JSON body: parsed and validated off the event loop, with the
error shapes FastAPI gives for a body parameter."""

import json
import threading
import time

import pytest
from factories import ADMIN_PW, nfs_frame
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings
from loupe.frame import IngestRequest

TOKEN = "route-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture
def client(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW))
    with TestClient(app) as c:
        yield c


def body(seq: int = 1) -> bytes:
    fr = nfs_frame(int(time.time()) - 3, [("10.0.0.1", "read", "/export/a", 3, 300, {14: 3})], source="rt@h", seq=seq)
    return json.dumps({"frames": [fr.model_dump()], "agent": "rt"}).encode()


def test_a_json_frame_being_validated_does_not_hold_up_other_requests(client, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    validate = IngestRequest.model_validate.__func__

    def slow_validate(cls, *a, **kw):  # a big frame's validation, held until the test lets it go
        entered.set()
        assert release.wait(30), "the test never released the validation"
        return validate(cls, *a, **kw)

    monkeypatch.setattr(IngestRequest, "model_validate", classmethod(slow_validate))
    answers = []
    sender = threading.Thread(target=lambda: answers.append(client.post("/api/v1/ingest", content=body(),
                                                                        headers=AUTH)))
    sender.start()
    try:
        assert entered.wait(10), "the JSON body was not validated by IngestRequest.model_validate"
        # The same event loop serves this while the frame is being validated.
        assert client.get("/healthz").status_code == 200
        assert not answers, "the ingest finished before its validation was released"
    finally:
        release.set()
        sender.join(30)
    assert answers[0].status_code == 200 and answers[0].json()["accepted"] == 1


@pytest.mark.parametrize("content, status, detail, want", [
    (b"", 422, "Field required", {"type": "missing", "loc": ["body"]}),
    (b'{"frames": [', 422, "12: JSON decode error", {"type": "json_invalid", "loc": ["body", 12]}),
    (b'{"frames": 3}', 422, "frames: Input should be a valid list", {"type": "list_type", "loc": ["body", "frames"]}),
    (b'{"frames": [], "agent": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400, "parsing the body", None),
])
def test_bad_json_bodies_get_the_error_that_names_the_problem(client, content, status, detail, want):
    r = client.post("/api/v1/ingest", content=content, headers=AUTH)
    assert r.status_code == status and detail in r.json()["detail"], r.text
    if want is not None:
        assert {k: r.json()["errors"][0][k] for k in want} == want


def test_a_json_body_needs_the_ingest_token_before_it_is_read(client):
    r = client.post("/api/v1/ingest", content=b'{"frames": [', headers={"Content-Type": "application/json"})
    assert r.status_code == 401
