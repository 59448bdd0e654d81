"""Content negotiation as webob reads it, the answers kept per header."""

from __future__ import annotations

import pytest
import webob

from stratus.placement.candidate_table import ASK_TABLE, WIRE_TYPE
from stratus.placement.http.accept import acceptable

OFFERS = ("application/json", WIRE_TYPE)


@pytest.mark.parametrize("header", [
    "", "text/html", "application/json", "*/*", "application/json;q=0", "garbage;;;",
    "text/*", ASK_TABLE, f"application/json, {WIRE_TYPE};q=0.5",
    f"{WIRE_TYPE};q=0, application/json"])
def test_the_same_answer_as_webob_best_first(header: str) -> None:
    parsed = webob.Request.blank("/", headers={"Accept": header}).accept
    assert acceptable(header, OFFERS) == tuple(o for o, _ in parsed.acceptable_offers(
        list(OFFERS)))


def test_a_scheduler_gets_the_table_and_a_browser_nothing() -> None:
    assert acceptable(ASK_TABLE, OFFERS)[0] == WIRE_TYPE
    assert acceptable("text/html", OFFERS) == ()
    assert acceptable("garbage;;;", OFFERS) == OFFERS   # unparseable: anything goes
