"""Links back into the UI: the worksheet query string the backend writes must be the one the UI
writes and reads (frontend/src/state/url.ts); the shared fixture is decoded by the UI's tests too."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from loupe.config import Settings
from loupe.links import check_public_url, enc, encode_statistic, format_span, worksheet_query

FIXTURE = Path(__file__).resolve().parents[2] / "tests/fixtures/worksheet-links.json"
CASES = json.loads(FIXTURE.read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["about"] for c in CASES])
def test_worksheet_links_are_the_ones_the_ui_writes(case):
    stat = encode_statistic(case["metric"], case["where"], case["by"])
    assert worksheet_query([stat], case["start"], case["end"]) == case["query"]


def test_names_and_values_are_escaped_as_encode_uri_component_does():
    # encodeURIComponent keeps A-Z a-z 0-9 - _ . ! ~ * ' ( ) and escapes the rest as UTF-8
    assert enc("AZaz09-_.!~*'()") == "AZaz09-_.!~*'()"
    assert enc("/a b;c,d=e^é&?#+%") == "%2Fa%20b%3Bc%2Cd%3De%5E%C3%A9%26%3F%23%2B%25"


@pytest.mark.parametrize(("seconds", "text"), [(60, "1m"), (600, "10m"), (3600, "1h"), (5400, "90m"),
                                               (86400, "1d"), (1209600, "2w"), (432060, "7201m")])
def test_spans_are_named_as_the_ui_names_them(seconds, text):
    assert format_span(seconds) == text


def test_a_span_is_whole_minutes_within_what_the_ui_accepts():
    assert worksheet_query(["x"], 100, 130).startswith("?range=1m&paused=1&at=130&")
    assert worksheet_query(["x"], 0, 600) == "?paused=1&at=600&s=x"  # the default range is left out
    assert worksheet_query(["x"], 0, 601).startswith("?range=11m&")
    assert worksheet_query(["x"], 0, 10**9).startswith("?range=366d&")


@pytest.mark.parametrize(("given", "kept"), [("https://nas1.example:8080/", "https://nas1.example:8080"),
                                             ("http://gw.example/loupe", "http://gw.example/loupe")])
def test_the_public_url_is_kept_without_its_trailing_slash(given, kept):
    assert check_public_url(given) == kept
    assert Settings(public_url=given).public_url == kept


@pytest.mark.parametrize(("given", "problem"), [("nas1.example:8080", "not an http:// or https:// URL"),
                                                ("ftp://nas1.example", "not an http:// or https:// URL"),
                                                ("https://nas1.example/?a=1", "has a query or fragment")])
def test_a_bad_public_url_is_refused_by_name(given, problem):
    with pytest.raises(ValidationError) as e:
        Settings(public_url=given)
    assert "public_url" in str(e.value) and problem in str(e.value)
    assert Settings(public_url="").public_url is None
