"""The service catalog a token carries: one entry per service type, the same URL for the
public, internal and admin interfaces (one region)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Service type -> the name OpenStack's clients know it by.
NAMES = {"identity": "keystone", "compute": "nova", "placement": "placement",
         "network": "neutron", "image": "glance"}
INTERFACES = ("public", "internal", "admin")


@dataclass(frozen=True)
class Catalog:
    urls: Mapping[str, str]          # service type -> endpoint URL
    region: str = "RegionOne"

    def _id(self, *parts: str) -> str:
        return hashlib.sha1("/".join(parts).encode()).hexdigest()[:32]

    def services(self) -> list[dict[str, Any]]:
        return [{"id": self._id(kind), "type": kind, "name": NAMES.get(kind, kind),
                 "enabled": True, "description": f"{NAMES.get(kind, kind)} ({kind})"}
                for kind in self.urls]

    def endpoints(self) -> list[dict[str, Any]]:
        return [{"id": self._id(kind, interface), "interface": interface,
                 "region": self.region, "region_id": self.region, "url": url,
                 "service_id": self._id(kind), "enabled": True}
                for kind, url in self.urls.items() for interface in INTERFACES]

    def render(self) -> list[dict[str, Any]]:
        """As in a token body (``token.catalog``)."""
        return [{"id": self._id(kind), "type": kind, "name": NAMES.get(kind, kind),
                 "endpoints": [{"id": self._id(kind, interface), "interface": interface,
                                "region": self.region, "region_id": self.region, "url": url}
                               for interface in INTERFACES]}
                for kind, url in self.urls.items()]
