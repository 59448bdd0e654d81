"""Small Placement worlds for candidates tests, written straight into the tables.

Each call is one write transaction that ends with ``record_change`` for the
providers it touched, exactly as the store's writes do, so the candidates
index sees it on the next query. Used by the functional tests; the HTTP
endpoints for providers and inventories are tested elsewhere.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.placement import schema as s
from stratus.placement.store.allocations import shift_usage
from stratus.placement.store.common import ensure_external_id, now, record_change
from stratus.storage import engine as db

Inventory = int | Mapping[str, Any]


class World:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.ids: dict[str, int] = {}     # provider uuid -> id
        self.names: dict[str, str] = {}   # provider name -> uuid

    def __getitem__(self, name: str) -> str:
        return self.names[name]

    # ---- providers ----------------------------------------------------------------

    def provider(self, name: str, *, parent: str | None = None,
                 inventory: Mapping[str, Inventory] | None = None,
                 traits: Iterable[str] = (), aggregates: Iterable[str] = (),
                 uuid: str | None = None) -> str:
        uuid = uuid or str(uuidlib.uuid4())
        rp = s.resource_providers
        with db.write(self.engine) as conn:
            values: dict[str, Any] = {"uuid": uuid, "name": name, "generation": 0,
                                      "created_at": now()}
            parent_uuid = self.names.get(parent, parent) if parent else None
            if parent_uuid is not None:
                parent_id = self.ids[parent_uuid]
                values["parent_provider_id"] = parent_id
                values["root_provider_id"] = conn.execute(
                    sa.select(rp.c.root_provider_id).where(rp.c.id == parent_id)).scalar_one()
            pid = int(conn.execute(sa.insert(rp).values(**values)).inserted_primary_key[0])
            if parent_uuid is None:
                conn.execute(sa.update(rp).where(rp.c.id == pid).values(root_provider_id=pid))
            self.ids[uuid] = pid
            self.names[name] = uuid
            self._inventory(conn, pid, inventory or {})
            self._traits(conn, pid, traits)
            self._aggregates(conn, pid, aggregates)
            record_change(conn, [pid])
        return uuid

    def set_inventory(self, provider: str, inventory: Mapping[str, Inventory]) -> None:
        pid = self._id(provider)
        with db.write(self.engine) as conn:
            conn.execute(sa.delete(s.inventories).where(
                s.inventories.c.resource_provider_id == pid))
            self._inventory(conn, pid, inventory)
            record_change(conn, [pid])

    def set_traits(self, provider: str, traits: Iterable[str]) -> None:
        pid = self._id(provider)
        with db.write(self.engine) as conn:
            conn.execute(sa.delete(s.resource_provider_traits).where(
                s.resource_provider_traits.c.resource_provider_id == pid))
            self._traits(conn, pid, traits)
            record_change(conn, [pid])

    def set_aggregates(self, provider: str, aggregates: Iterable[str]) -> None:
        pid = self._id(provider)
        with db.write(self.engine) as conn:
            conn.execute(sa.delete(s.resource_provider_aggregates).where(
                s.resource_provider_aggregates.c.resource_provider_id == pid))
            self._aggregates(conn, pid, aggregates)
            record_change(conn, [pid])

    def delete(self, provider: str) -> None:
        pid = self._id(provider)
        with db.write(self.engine) as conn:
            for table in (s.inventories, s.resource_provider_traits,
                          s.resource_provider_aggregates, s.allocations):
                conn.execute(sa.delete(table).where(table.c.resource_provider_id == pid))
            conn.execute(sa.delete(s.resource_providers).where(s.resource_providers.c.id == pid))
            record_change(conn, [pid])

    def allocate(self, allocations: Mapping[str, Mapping[str, int]],
                 consumer: str | None = None) -> str:
        """Give a (new) consumer these amounts: provider -> class -> used."""
        consumer = consumer or str(uuidlib.uuid4())
        with db.write(self.engine) as conn:
            project = ensure_external_id(conn, s.projects, "project")
            user = ensure_external_id(conn, s.users, "user")
            cid = int(conn.execute(sa.insert(s.consumers).values(
                uuid=consumer, project_id=project, user_id=user, generation=0,
                created_at=now())).inserted_primary_key[0])
            touched = []
            for provider, resources in allocations.items():
                pid = self._id(provider)
                touched.append(pid)
                for rc, used in resources.items():
                    rc_id = self._class_id(conn, rc)
                    conn.execute(sa.insert(s.allocations).values(
                        resource_provider_id=pid, consumer_id=cid,
                        resource_class_id=rc_id, used=used, created_at=now()))
                    shift_usage(conn, {(pid, rc_id): used})
            record_change(conn, touched)
        return consumer

    # ---- helpers --------------------------------------------------------------------

    def _id(self, provider: str) -> int:
        return self.ids[self.names.get(provider, provider)]

    def _inventory(self, conn: Connection, pid: int, inventory: Mapping[str, Inventory]
                   ) -> None:
        for rc, spec in inventory.items():
            fields = {"total": spec} if isinstance(spec, int) else dict(spec)
            row = {"reserved": 0, "min_unit": 1, "max_unit": fields["total"],
                   "step_size": 1, "allocation_ratio": 1.0, **fields}
            conn.execute(sa.insert(s.inventories).values(
                resource_provider_id=pid, resource_class_id=self._class_id(conn, rc),
                created_at=now(), **row))

    def _traits(self, conn: Connection, pid: int, traits: Iterable[str]) -> None:
        for name in traits:
            conn.execute(sa.insert(s.resource_provider_traits).values(
                resource_provider_id=pid, trait_id=self._named(conn, s.traits, name),
                created_at=now()))

    def _aggregates(self, conn: Connection, pid: int, aggregates: Iterable[str]) -> None:
        for agg in aggregates:
            agg_id = conn.execute(sa.select(s.placement_aggregates.c.id).where(
                s.placement_aggregates.c.uuid == agg)).scalar()
            if agg_id is None:
                agg_id = conn.execute(sa.insert(s.placement_aggregates).values(
                    uuid=agg)).inserted_primary_key[0]
            conn.execute(sa.insert(s.resource_provider_aggregates).values(
                resource_provider_id=pid, aggregate_id=agg_id, created_at=now()))

    def _class_id(self, conn: Connection, name: str) -> int:
        return self._named(conn, s.resource_classes, name)

    @staticmethod
    def _named(conn: Connection, table: sa.Table, name: str) -> int:
        found = conn.execute(sa.select(table.c.id).where(table.c.name == name)).scalar()
        if found is None:
            found = conn.execute(sa.insert(table).values(
                name=name, created_at=now())).inserted_primary_key[0]
        return int(found)
