"""claims.move_allocations: one atomic POST that gives the target what the source holds."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.placement import client as pc
from stratus.scheduler import claims


class FakePlacement:
    """Consumers and their allocations; POST /allocations checks generations like Placement."""

    def __init__(self, races: int = 0) -> None:
        self.consumers: dict[str, dict[str, Any]] = {}
        self.races = races          # POSTs to refuse as concurrent updates first
        self.posts: list[dict[str, Any]] = []

    def get_allocations(self, consumer: str) -> dict[str, Any]:
        found = self.consumers.get(consumer)
        if found is None:
            return {"allocations": {}}
        return {"allocations": {rp: {"resources": dict(r)} for rp, r in found["held"].items()},
                "consumer_generation": found["generation"], "project_id": "p",
                "user_id": "u"}

    def post_allocations(self, body: dict[str, Any]) -> None:
        self.posts.append(body)
        if self.races:   # someone else wrote the source meanwhile: its generation moved
            self.races -= 1
            for found in self.consumers.values():
                found["generation"] += 1
            raise pc.ConcurrentUpdate("POST", "/allocations", 409, pc.CONCURRENT_UPDATE, "race")
        for uuid, data in body.items():
            have = self.consumers.get(uuid)
            if (have or {}).get("generation") != data["consumer_generation"]:
                raise pc.ConcurrentUpdate("POST", "/allocations", 409, pc.CONCURRENT_UPDATE,
                                          f"generation of {uuid}")
        for uuid, data in body.items():
            held = {rp: dict(a["resources"]) for rp, a in data["allocations"].items()}
            if held:
                gen = (self.consumers.get(uuid) or {}).get("generation", -1) + 1
                self.consumers[uuid] = {"held": held, "generation": gen}
            else:
                self.consumers.pop(uuid, None)   # Placement deletes consumers left empty


def test_the_target_gets_exactly_what_the_source_held_in_one_post() -> None:
    fake = FakePlacement()
    fake.consumers["vm"] = {"held": {"rp1": {"VCPU": 2}}, "generation": 3}
    moved = claims.move_allocations(fake, "vm", "mig", target_type="MIGRATION")  # type: ignore[arg-type]
    assert moved == {"rp1": {"resources": {"VCPU": 2}}}
    assert fake.consumers == {"mig": {"held": {"rp1": {"VCPU": 2}}, "generation": 0}}
    [body] = fake.posts
    assert body["mig"]["consumer_type"] == "MIGRATION" and body["vm"]["allocations"] == {}


def test_moving_back_replaces_what_the_target_holds_meanwhile() -> None:
    fake = FakePlacement()
    fake.consumers["mig"] = {"held": {"src": {"VCPU": 1}}, "generation": 0}
    fake.consumers["vm"] = {"held": {"dst": {"VCPU": 4}}, "generation": 7}
    claims.move_allocations(fake, "mig", "vm")  # type: ignore[arg-type]
    assert fake.consumers == {"vm": {"held": {"src": {"VCPU": 1}}, "generation": 8}}


def test_races_are_re_read_and_retried_then_given_up() -> None:
    fake = FakePlacement(races=2)
    fake.consumers["vm"] = {"held": {"rp1": {"VCPU": 1}}, "generation": 0}
    claims.move_allocations(fake, "vm", "mig", retries=3)  # type: ignore[arg-type]
    # Each retry sent the generation as it was after the race (re-read, not remembered).
    assert [p["vm"]["consumer_generation"] for p in fake.posts] == [0, 1, 2]
    assert "mig" in fake.consumers
    stubborn = FakePlacement(races=10)
    stubborn.consumers["vm"] = {"held": {"rp1": {"VCPU": 1}}, "generation": 0}
    with pytest.raises(pc.ConcurrentUpdate):
        claims.move_allocations(stubborn, "vm", "mig", retries=2)  # type: ignore[arg-type]
    assert stubborn.consumers["vm"]["held"] == {"rp1": {"VCPU": 1}}   # nothing moved


def test_nothing_to_move_posts_nothing() -> None:
    fake = FakePlacement()
    assert claims.move_allocations(fake, "vm", "mig") == {}  # type: ignore[arg-type]
    assert fake.posts == []


def test_only_if_held_leaves_the_target_alone_when_the_source_holds_nothing() -> None:
    fake = FakePlacement()
    fake.consumers["vm"] = {"held": {"dst": {"VCPU": 4}}, "generation": 2}
    assert claims.move_allocations(fake, "mig", "vm", only_if_held=True) == {}  # type: ignore[arg-type]
    assert fake.posts == [] and fake.consumers["vm"]["held"] == {"dst": {"VCPU": 4}}
    # Without it, the target gets exactly the nothing the source holds.
    claims.move_allocations(fake, "mig", "vm")  # type: ignore[arg-type]
    assert "vm" not in fake.consumers
