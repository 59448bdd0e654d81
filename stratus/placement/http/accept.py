"""Content negotiation: which of the offered media types an ``Accept`` header admits,
best first (webob's reading, as Placement's).

Clients send the same few headers on every request (``application/json``, a Stratus
scheduler's ``WIRE_TYPE, application/json;q=0.9``), and webob parses a header anew each
time it is asked: the answers are kept per header.
"""

from __future__ import annotations

import functools

import webob


@functools.lru_cache(maxsize=256)
def acceptable(accept: str, offers: tuple[str, ...]) -> tuple[str, ...]:
    """``offers`` that ``accept`` admits, best first; a header that cannot be parsed
    admits every offer (webob's rule)."""
    header = webob.acceptparse.create_accept_header(accept)
    return tuple(offer for offer, _quality in header.acceptable_offers(list(offers)))
