"""A seeded request fuzzer for Stratus's HTTP APIs, driven by each API's route table.

Every request is one route and method of the table (or a path that is none), with path
parameters, query parameters, headers and a body drawn from values that are valid for
the API (real ids made beforehand, example bodies) and from values that break things:
integers at and past every width, NUL characters, lone surrogates, bytes that are not
UTF-8, deep nesting, huge strings, wrong types, missing and extra keys, garbage
microversions and content types. The same seed gives the same requests, so any answer
of 500 or more is reported with what reproduces it.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

# Raw path and query pieces, already percent-encoded where they must be.
NASTY_RAW = ["%00", "%ff", "%ed%a0%80", "%c0%af", "a%00b", "%2F", "%25", "..", ".",
             "%20", "%e2%80%ae", "%f0%9f%92%a9"]
NUMBERS = [0, -1, 1, 2**31 - 1, 2**31, -(2**31) - 1, 2**32, 2**53, 2**63 - 1, 2**63, 2**64,
           10**20, 10**100]
STRINGS = ["", " ", "a" * 256, "a" * 70_000, "\x00", "a\x00b", "\ud800", "x\udfffy", "é",
           "💩", "null", "true", "-1", "1e999", "NaN", "CUSTOM_", "VCPU", "in:", "!",
           "VCPU:1,MEMORY_MB", ",", "::", "=", "%", "'; DROP TABLE x; --", "\n", "\t"]
HEADER_JUNK = ["", " ", "latest", "1.0", "9.99", "1.999999999999", "-1.0", "1.", ".1",
               "1.1.1", "a.b", "x" * 300, "1.39, 1.2", "\t1.1"]


def q(text: str) -> str:
    """Percent-encode, lone surrogates too (as the bytes a careless client would send)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


@dataclass
class Surface:
    """What the fuzzer knows of one API."""

    name: str
    routes: Sequence[tuple[str, Mapping[str, Any]]]
    service_type: str                                   # for OpenStack-API-Version
    versions: Sequence[str]                             # good version strings
    ids: dict[str, list[str]] = field(default_factory=dict)   # path parameter -> values
    bodies: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    query_names: Sequence[str] = ()
    prefix: str = ""
    tokens: Sequence[str] = ("admin",)
    legacy_header: str | None = None                    # X-OpenStack-Nova-API-Version


@dataclass
class Sent:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None

    def reproduce(self) -> str:
        shown = self.body[:300] if self.body else b""
        return (f"{self.method} {self.url} headers={self.headers} body={shown!r}"
                + (" ..." if self.body and len(self.body) > 300 else ""))


@dataclass
class Finding:
    sent: Sent
    status: int
    text: str


class Fuzzer:
    def __init__(self, surface: Surface, seed: int, clean_share: float = 0.25) -> None:
        self.s = surface
        self.rng = random.Random(seed)
        self.clean_share = clean_share

    # ---- pieces -------------------------------------------------------------------------

    def _pick(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    def path_value(self, name: str) -> str:
        roll = self.rng.random()
        known = self.s.ids.get(name) or self.s.ids.get("*") or ["x"]
        if roll < 0.45:
            return q(str(self._pick(known)))
        if roll < 0.7:
            return self._pick(NASTY_RAW) + (q(str(self._pick(known)))
                                            if self.rng.random() < 0.3 else "")
        if roll < 0.85:
            return q(str(self._pick(NUMBERS)))
        return q(self._pick(STRINGS)[:2000])

    def path(self, template: str) -> str:
        parts = re.split(r"\{(\w+)\}", template)
        out = []
        for i, part in enumerate(parts):
            out.append(self.path_value(part) if i % 2 else part)
        path = "".join(out)
        if self.rng.random() < 0.05:
            path += self._pick(["/", "//", "/extra", ".json", "%00"])
        return self.s.prefix + path

    def query_value(self) -> str:
        roll = self.rng.random()
        if roll < 0.3:
            return self._pick(NASTY_RAW)
        if roll < 0.55:
            return q(str(self._pick(NUMBERS)))
        if roll < 0.7 and self.s.ids:
            pool = [v for vs in self.s.ids.values() for v in vs]
            if pool:
                return q(str(self._pick(pool)))
        if roll < 0.85:
            rc = self._pick(["VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_X",
                             "NET_BW_EGR_KILOBIT_PER_SEC"])
            return q(f"{rc}:{self._pick(NUMBERS)}")
        return q(self._pick(STRINGS)[:500])

    def query(self) -> str:
        if self.rng.random() < 0.4:
            return ""
        pairs = []
        for _ in range(self.rng.randint(1, 4)):
            name = self._pick(self.s.query_names) if self.s.query_names and \
                self.rng.random() < 0.8 else self._pick([*NASTY_RAW, "", "x"])
            if self.rng.random() < 0.2:   # a numbered group: resources1, required_a
                name += self._pick(["1", "_a", "99999999999999999999", "%00", "_"])
            pairs.append(f"{name}={self.query_value()}")
        return "?" + "&".join(pairs)

    def value(self, depth: int = 0) -> Any:
        roll = self.rng.random()
        if roll < 0.3:
            return self._pick(NUMBERS)
        if roll < 0.55:
            return self._pick(STRINGS)
        if roll < 0.65:
            return self._pick([None, True, False, 1.5, -0.0, 1e308])
        if roll < 0.75 and depth < 3:
            return [self.value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        if roll < 0.85 and depth < 3:
            return {self._pick(STRINGS)[:20]: self.value(depth + 1)
                    for _ in range(self.rng.randint(0, 3))}
        if roll < 0.9:
            nest = self.rng.choice([30, 33, 100])   # deeper: raw bytes, in body()
            out: Any = 1
            for _ in range(nest):
                out = [out]
            return out
        return {}

    def mutate(self, body: Any, depth: int = 0) -> Any:
        """One of the body's values (or keys) replaced, removed or added to."""
        if isinstance(body, dict) and body and depth < 6:
            key = self._pick(list(body))
            roll = self.rng.random()
            out = dict(body)
            if roll < 0.55:
                out[key] = self.mutate(body[key], depth + 1)
            elif roll < 0.7:
                del out[key]
            elif roll < 0.85:
                out[self._pick(STRINGS)[:30]] = self.value()
            else:
                out[self._pick(STRINGS)[:30] or "k"] = out.pop(key)
            return out
        if isinstance(body, list) and body and depth < 6:
            out_list = list(body)
            i = self.rng.randrange(len(out_list))
            if self.rng.random() < 0.7:
                out_list[i] = self.mutate(out_list[i], depth + 1)
            else:
                out_list.append(self.value())
            return out_list
        return self.value()

    def body(self, template: str, method: str) -> bytes | None:
        if method in ("GET", "DELETE", "HEAD") and self.rng.random() < 0.9:
            return None
        examples = self.s.bodies.get((template, method)) or [{}]
        roll = self.rng.random()
        if roll < 0.15:
            return self.rng.choice([b"", b"{", b"null", b"[]", b"\xff\xfe", b"{\"a\": 1}x",
                                    b"1" * 5000, b"{\"a\":" * 50, b"\"\\ud800\"",
                                    b"[" * 1000 + b"]" * 1000,
                                    b"{\"a\":" * 400 + b"1" + b"}" * 400])
        value = self._pick(examples)
        for _ in range(self.rng.randint(0 if roll < 0.25 else 1, 3)):
            value = self.mutate(value)
        return json.dumps(value, ensure_ascii=self.rng.random() < 0.8,
                          allow_nan=True).encode("utf-8", "surrogatepass")

    def headers(self, has_body: bool) -> dict[str, str]:
        h = {"X-Auth-Token": self._pick(list(self.s.tokens))}
        roll = self.rng.random()
        if roll < 0.75:
            h["OpenStack-API-Version"] = f"{self.s.service_type} {self._pick(self.s.versions)}"
        elif roll < 0.9:
            h["OpenStack-API-Version"] = f"{self.s.service_type} {self._pick(HEADER_JUNK)}"
        elif roll < 0.95:
            h["OpenStack-API-Version"] = self._pick(HEADER_JUNK)
        if self.s.legacy_header and self.rng.random() < 0.1:
            h[self.s.legacy_header] = self._pick(HEADER_JUNK)
        if has_body:
            h["Content-Type"] = "application/json" if self.rng.random() < 0.85 else \
                self._pick(["text/plain", "application/json; charset=latin-1", "",
                            "application/x-www-form-urlencoded", "application/json;;"])
        if self.rng.random() < 0.05:
            h["X-Auth-Token"] = self._pick(["", "nobody", "a:b:c", "x" * 1000, "user:proj"])
        if self.rng.random() < 0.05:
            h["Accept"] = self._pick(["text/html", "*/*", "application/xml", ""])
        if self.rng.random() < 0.03:
            h["If-Match"] = self._pick(["*", "revision_number=1", "revision_number=x",
                                        "revision_number=99999999999999999999"])
        return h

    def clean(self, template: str, method: str) -> Sent:
        """A request as a careful client sends it: known ids, an example body, the newest
        version. Mixed in so the fuzzed ones find state worth breaking."""
        path = re.sub(r"\{(\w+)\}", lambda m: q(str(self._pick(
            self.s.ids.get(m.group(1)) or self.s.ids.get("*") or ["x"]))), template)
        examples = self.s.bodies.get((template, method))
        body = json.dumps(self._pick(examples)).encode() if examples else None
        headers = {"X-Auth-Token": self.s.tokens[0],
                   "OpenStack-API-Version": f"{self.s.service_type} {self.s.versions[-1]}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return Sent(method, self.s.prefix + path, headers, body)

    def requests(self, count: int) -> Iterator[Sent]:
        for _ in range(count):
            template, handlers = self._pick(list(self.s.routes))
            if self.rng.random() < self.clean_share and handlers:
                yield self.clean(template, self._pick(list(handlers)))
                continue
            methods = list(handlers) or ["GET"]
            method = self._pick(methods) if self.rng.random() < 0.9 else \
                self._pick(["GET", "PUT", "POST", "DELETE", "PATCH"])
            body = self.body(template, method)
            yield Sent(method, self.path(template) + self.query(), self.headers(
                body is not None), body)


def run(http: httpx.Client, surface: Surface, seed: int, count: int,
        before_each: Callable[[], None] | None = None, clean_share: float = 0.25
        ) -> tuple[list[Finding], dict[int, int]]:
    """Send ``count`` requests; the answers of 500 or more, and a count per status."""
    findings: list[Finding] = []
    statuses: dict[int, int] = {}
    for sent in Fuzzer(surface, seed, clean_share).requests(count):
        if before_each is not None:
            before_each()
        try:
            resp = http.request(sent.method, sent.url, headers=sent.headers,
                                content=sent.body)
        except httpx.LocalProtocolError:
            continue   # the client itself will not send it (an illegal header value)
        except httpx.TransportError as exc:   # over HTTP: a dropped connection
            statuses[0] = statuses.get(0, 0) + 1
            findings.append(Finding(sent, 0, f"connection lost: {exc!r}"))
            continue
        except httpx.InvalidURL:
            continue   # a request the client itself will not send (not the server's)
        statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
        if resp.status_code >= 500:
            findings.append(Finding(sent, resp.status_code, resp.text[:300]))
    return findings, statuses


def report(findings: list[Finding]) -> str:
    return "\n".join(f"{f.status}: {f.sent.reproduce()}\n    -> {f.text}" for f in findings[:20])
