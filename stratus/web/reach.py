"""Reaching a peer service over HTTP: failures that name the service and its URL, and
which requests may be sent again after one.

A transport failure is one of three, each an ``httpx`` error (every caller of the
service clients already handles those) whose message says where::

    Unreachable     cannot reach Placement at http://ctl:8778 (connection refused)
                    the request never left: any request may be sent again
    ConnectionLost  Placement at http://ctl:8778: connection lost during PUT /allocations/x
                    (reset by peer): it may or may not have been done
    NoAnswer        Placement at http://ctl:8778 did not answer GET /... within 30s

:func:`repeatable` says whether a request may be sent again after such a failure:
always if it never left; otherwise only if repeating it is harmless (GET, PUT,
DELETE, or a POST its caller declares ``guarded``: one that a generation protects,
so a repeat after it was done is refused with a conflict the caller resolves).
"""

from __future__ import annotations

import httpx
import urllib3

SAFE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})


class Unreachable(httpx.ConnectError):
    """The connection could not be made: the request was not sent."""


class ConnectionLost(httpx.ReadError):
    """The connection broke after the request was (maybe) sent."""


class NoAnswer(httpx.ReadTimeout):
    """Sent, but no answer in time."""


def _where(service: str, base_url: str) -> str:
    return f"{service} at {base_url.rstrip('/')}"


def unreachable(service: str, base_url: str, why: object) -> Unreachable:
    return Unreachable(f"cannot reach {_where(service, base_url)} ({_reason(why)})")


def from_urllib3(exc: urllib3.exceptions.HTTPError, service: str, base_url: str,
                 method: str, path: str) -> httpx.TransportError:
    """urllib3's failure (a pool that does not retry) as one of ours."""
    why: object = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    # NewConnectionError subclasses ConnectTimeoutError (and so TimeoutError): test it first.
    if isinstance(why, (urllib3.exceptions.NewConnectionError,
                        urllib3.exceptions.NameResolutionError,
                        urllib3.exceptions.ConnectTimeoutError)):
        return unreachable(service, base_url, why)
    if isinstance(why, urllib3.exceptions.TimeoutError):
        return NoAnswer(f"{_where(service, base_url)} did not answer {method} {path} in time "
                        f"({_reason(why)})")
    return ConnectionLost(f"{_where(service, base_url)}: connection lost during {method} "
                          f"{path} ({_reason(why)})")


def from_httpx(exc: httpx.TransportError, service: str, base_url: str, method: str,
               path: str) -> httpx.TransportError:
    """httpx's failure as one of ours (the network API's client is on httpx)."""
    if isinstance(exc, (Unreachable, ConnectionLost, NoAnswer)):
        return exc
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        return unreachable(service, base_url, exc)
    if isinstance(exc, httpx.TimeoutException):
        return NoAnswer(f"{_where(service, base_url)} did not answer {method} {path} in time "
                        f"({_reason(exc)})")
    return ConnectionLost(f"{_where(service, base_url)}: connection lost during {method} "
                          f"{path} ({_reason(exc)})")


def repeatable(method: str, exc: Exception, guarded: bool = False) -> bool:
    """Whether a request that failed with ``exc`` may be sent again."""
    if isinstance(exc, Unreachable):
        return True
    if isinstance(exc, (ConnectionLost, NoAnswer)):
        return method.upper() in SAFE_METHODS or guarded
    return False


def _reason(why: object) -> str:
    """The operating system's words where there are some ("connection refused")."""
    text = str(why)
    for marker in ("Connection refused", "Connection reset by peer", "Name or service not known",
                   "timed out", "Remote end closed connection without response"):
        if marker.lower() in text.lower():
            return marker[0].lower() + marker[1:]
    return " ".join(text.split()) or type(why).__name__
